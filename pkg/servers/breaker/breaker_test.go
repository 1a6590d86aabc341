package breaker

import (
	"testing"
	"time"
)

func TestBreakerFollowsTheSpec(t *testing.T) {
	now := time.Unix(1000, 0)
	b := New(3, 30*time.Second, func() time.Time { return now })
	for i := 0; i < 2; i++ {
		b.Failure()
	}
	if s, f, _ := b.State(); s != Closed || f != 2 {
		t.Fatalf("after 2 failures: %s %d", s, f)
	}
	b.Success()
	b.Failure()
	b.Failure()
	if s, _, _ := b.State(); s != Closed {
		t.Fatalf("a success must reset the count: %s", s)
	}
	b.Failure()
	if ok, retry := b.Allow(); ok || !retry.Equal(now.Add(30*time.Second)) {
		t.Fatalf("OPEN must refuse until the recovery timeout: %v %v", ok, retry)
	}
	now = now.Add(30 * time.Second)
	if ok, _ := b.Allow(); !ok {
		t.Fatal("HALF_OPEN must let one probe through")
	}
	if ok, _ := b.Allow(); ok {
		t.Fatal("HALF_OPEN must let only one probe through")
	}
	b.Failure()
	if s, _, _ := b.State(); s != Open {
		t.Fatalf("a failed probe must reopen: %s", s)
	}
	now = now.Add(30 * time.Second)
	if ok, _ := b.Allow(); !ok {
		t.Fatal("probe after the second recovery timeout")
	}
	b.Success()
	if s, f, _ := b.State(); s != Closed || f != 0 {
		t.Fatalf("a good probe must close: %s %d", s, f)
	}
}
