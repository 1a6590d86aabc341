package gateway

import "time"

// SetReadTimeouts shortens the request read timeouts for a test and
// returns a function that restores them.
func SetReadTimeouts(header, whole time.Duration) (restore func()) {
	h, w := readHeaderTimeout, readTimeout
	readHeaderTimeout, readTimeout = header, whole
	return func() { readHeaderTimeout, readTimeout = h, w }
}

// SetQuietFollow sets how long an unwatched gateway lets changes pile up
// before reading them, and returns a function that restores it.
func SetQuietFollow(d time.Duration) (restore func()) {
	old := quietFollow
	quietFollow = d
	return func() { quietFollow = old }
}
