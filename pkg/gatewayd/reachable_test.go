package gatewayd

import "testing"

// The URL printed for a gateway listening on every interface can be
// opened: it goes through loopback, not to http://[::]:PORT/.
func TestReachableAddress(t *testing.T) {
	for addr, want := range map[string]string{
		"[::]:7437":      "127.0.0.1:7437",
		"0.0.0.0:7437":   "127.0.0.1:7437",
		"127.0.0.1:7437": "127.0.0.1:7437",
		"[::1]:7437":     "[::1]:7437",
		"10.1.2.3:80":    "10.1.2.3:80",
	} {
		if got := Reachable(addr); got != want {
			t.Errorf("Reachable(%q) = %q, want %q", addr, got, want)
		}
	}
}
