//go:build darwin || windows

package keyring

// sessionBus is D-Bus's concern only: the Keychain and the Credential
// Manager need no session bus.
func sessionBus() error { return nil }
