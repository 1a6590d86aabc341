package hub

import (
	"testing"

	"lmtool.dev/lm/pkg/servers"
)

func TestActivityLogKeepsTheLatestInOrderAndWakesReaders(t *testing.T) {
	l := newActivityLog(3)
	items, wake := l.recent()
	if len(items) != 0 {
		t.Fatalf("empty log: %+v", items)
	}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		l.add(servers.Activity{Name: name})
	}
	select {
	case <-wake:
	default:
		t.Fatal("a reader was not woken by a new call")
	}
	items, wake = l.recent()
	var got string
	for _, a := range items {
		got += a.Name
	}
	if got != "cde" || items[0].Seq != 3 || items[2].Seq != 5 {
		t.Fatalf("recent = %+v, want c, d, e numbered 3 to 5", items)
	}
	if fresh := since(items, 4); len(fresh) != 1 || fresh[0].Name != "e" {
		t.Fatalf("since 4 = %+v", fresh)
	}
	select {
	case <-wake:
		t.Fatal("woken with no new call")
	default:
	}
}
