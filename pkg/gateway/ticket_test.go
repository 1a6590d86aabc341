package gateway

import (
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/op"
)

// A ticket opens one stream, as its caller, within its time; and a full
// table of unredeemed tickets makes room without losing the newest.
func TestTicketsAreSingleUseAndShortLived(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tk := newTickets()
	tk.now = func() time.Time { return now }
	agent := op.Caller{Role: op.RoleAgent, Name: "claude"}

	text, expires := tk.issue(agent)
	if !strings.HasPrefix(text, "lmt_") || len(text) != 4+64 || !expires.Equal(now.Add(ticketTTL)) {
		t.Fatalf("ticket %q expiring %v", text, expires)
	}
	if c, ok := tk.redeem(text); !ok || c != agent {
		t.Fatalf("redeemed as %+v, %v; want the agent who asked", c, ok)
	}
	if _, ok := tk.redeem(text); ok {
		t.Fatal("a ticket was redeemed twice")
	}
	if _, ok := tk.redeem("lmt_" + strings.Repeat("0", 64)); ok {
		t.Fatal("a ticket nobody issued was redeemed")
	}

	late, _ := tk.issue(agent)
	now = now.Add(ticketTTL)
	if _, ok := tk.redeem(late); ok {
		t.Fatal("an expired ticket was redeemed")
	}

	first, _ := tk.issue(agent)
	for range maxTickets {
		now = now.Add(time.Millisecond)
		tk.issue(agent)
	}
	if len(tk.byDigest) > maxTickets {
		t.Fatalf("%d tickets kept, more than %d", len(tk.byDigest), maxTickets)
	}
	if _, ok := tk.redeem(first); ok {
		t.Fatal("the oldest ticket survived a full table")
	}
	newest, _ := tk.issue(agent)
	if _, ok := tk.redeem(newest); !ok {
		t.Fatal("the newest ticket was dropped")
	}
}

func TestParseOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:5173":   "http://localhost:5173",
		"HTTP://LocalHost:5173/":  "http://localhost:5173",
		"https://app.example:443": "https://app.example",
		"http://127.0.0.1:80":     "http://127.0.0.1",
		"http://[::1]:8080":       "http://[::1]:8080",
	} {
		if got, err := ParseOrigin(in); err != nil || got != want {
			t.Errorf("ParseOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"*", "null", "", "localhost:5173", "ftp://x.example", "http://x.example/app", "http://x.example?a=1",
		"http://user@x.example", "http://*.example", "http://", "http://x.example#f"} {
		if got, err := ParseOrigin(in); err == nil || op.KindOf(err) != op.KindInvalid {
			t.Errorf("ParseOrigin(%q) = %q, %v; want it refused as invalid", in, got, err)
		}
	}
}
