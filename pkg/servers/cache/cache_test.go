package cache

import (
	"encoding/json"
	"testing"
	"time"
)

func TestCacheKeysOnCanonicalParams(t *testing.T) {
	a, _ := KeyOf("s", "tools/call", "t", map[string]any{"a": 1, "b": map[string]any{"x": 1, "y": 2}})
	b, _ := KeyOf("s", "tools/call", "t", json.RawMessage(`{"b":{"y":2,"x":1},"a":1}`))
	if a != b {
		t.Fatalf("key order changed the key: %v %v", a, b)
	}
}

func TestCacheLRUTTLAndInvalidation(t *testing.T) {
	now := time.Unix(0, 0)
	c := New(2, time.Minute, func() time.Time { return now })
	k := func(n string) Key { return Key{Server: "s", Method: "resources/read", Name: n, Hash: n} }
	c.Put(k("1"), 1)
	c.Put(k("2"), 2)
	c.Get(k("1")) // 1 is now the most recent
	c.Put(k("3"), 3)
	if _, ok := c.Get(k("2")); ok {
		t.Fatal("the least recently used entry must be evicted")
	}
	if v, ok := c.Get(k("1")); !ok || v != 1 {
		t.Fatal("a recent entry was evicted")
	}
	if n := c.Invalidate("s", "resources/read", "3"); n != 1 {
		t.Fatalf("invalidated %d", n)
	}
	now = now.Add(2 * time.Minute)
	if _, ok := c.Get(k("1")); ok {
		t.Fatal("an expired entry was served")
	}
	s := c.Stats()
	if s.Hits != 2 || s.Misses != 2 || s.Evictions != 1 || s.Entries != 0 {
		t.Fatalf("stats %+v", s)
	}
}
