// Package cache is the hub's L1 cache: an exact-match LRU with a TTL, keyed
// by server, method and a hash of the canonical parameters, so the same
// request written with its keys in another order still hits.
package cache

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"
)

// Key identifies a request.
type Key struct {
	Server, Method, Hash string
	Name                 string // the tool or resource, for invalidation
}

// KeyOf builds the key for a request. params is re-encoded canonically
// (object keys sorted) before hashing.
func KeyOf(server, method, name string, params any) (Key, error) {
	data, err := json.Marshal(params)
	if err != nil {
		return Key{}, err
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		return Key{}, err
	}
	canonical, err := json.Marshal(generic) // maps marshal with sorted keys
	if err != nil {
		return Key{}, err
	}
	sum := sha256.Sum256(canonical)
	return Key{Server: server, Method: method, Name: name, Hash: hex.EncodeToString(sum[:])}, nil
}

// Stats are the counters the dashboard shows.
type Stats struct {
	Entries, MaxSize        int
	TTL                     time.Duration
	Hits, Misses, Evictions uint64
}

// Cache is safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	max     int
	ttl     time.Duration
	now     func() time.Time
	order   *list.List // front is most recently used
	entries map[Key]*list.Element
	stats   Stats
}

type entry struct {
	key     Key
	value   any
	expires time.Time
}

// New is a cache of at most max entries that live for ttl.
func New(max int, ttl time.Duration, now func() time.Time) *Cache {
	return &Cache{max: max, ttl: ttl, now: now, order: list.New(), entries: map[Key]*list.Element{}}
}

// Get returns a live entry.
func (c *Cache) Get(k Key) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		e := el.Value.(*entry)
		if c.now().Before(e.expires) {
			c.order.MoveToFront(el)
			c.stats.Hits++
			return e.value, true
		}
		c.remove(el)
	}
	c.stats.Misses++
	return nil, false
}

// Put stores a value, evicting the least recently used entry when full.
func (c *Cache) Put(k Key, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		c.remove(el)
	}
	c.entries[k] = c.order.PushFront(&entry{key: k, value: v, expires: c.now().Add(c.ttl)})
	for c.order.Len() > c.max {
		c.remove(c.order.Back())
		c.stats.Evictions++
	}
}

// Invalidate drops a server's entries for method (all methods when empty)
// and, when name is not empty, only those about name.
func (c *Cache) Invalidate(server, method, name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, el := range c.entries {
		if k.Server == server && (method == "" || k.Method == method) && (name == "" || k.Name == name) {
			c.remove(el)
			n++
		}
	}
	return n
}

// Resize applies new limits, as when the person saves new settings: entries
// beyond max go, least recently used first; live ones keep their expiry.
func (c *Cache) Resize(max int, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max, c.ttl = max, ttl
	for c.order.Len() > c.max {
		c.remove(c.order.Back())
		c.stats.Evictions++
	}
}

// Clear empties the cache; the counters stay.
func (c *Cache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.entries)
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Entries, s.MaxSize, s.TTL = c.order.Len(), c.max, c.ttl
	return s
}

func (c *Cache) remove(el *list.Element) {
	c.order.Remove(el)
	delete(c.entries, el.Value.(*entry).key)
}
