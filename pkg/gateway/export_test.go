package gateway

import "time"

// SetReadTimeouts shortens the request read timeouts for a test and
// returns a function that restores them.
func SetReadTimeouts(header, whole time.Duration) (restore func()) {
	h, w := readHeaderTimeout, readTimeout
	readHeaderTimeout, readTimeout = header, whole
	return func() { readHeaderTimeout, readTimeout = h, w }
}
