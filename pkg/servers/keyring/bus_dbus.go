//go:build !darwin && !windows

package keyring

import (
	"errors"
	"fmt"
	"os"

	"github.com/godbus/dbus/v5"
)

// sessionBus checks that a D-Bus session bus is there before go-keyring
// asks it for the Secret Service: without one, godbus would run
// dbus-launch, which starts a bus of its own that outlives lm.
func sessionBus() error {
	conn, err := dbus.SessionBusPrivateNoAutoStartup()
	if err != nil {
		if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
			return errors.New("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
		}
		return fmt.Errorf("no D-Bus session bus: %w", err)
	}
	return conn.Close()
}
