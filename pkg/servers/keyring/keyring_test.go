package keyring_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/servers/keyring"
	"lmtool.dev/lm/pkg/servers/keyring/keyringtest"
)

func TestSecretServiceRoundTrip(t *testing.T) {
	keyringtest.Start(t)
	keyringtest.Need(t, "secret-tool")
	ctx := context.Background()
	// A secret stored the way the package documents is found.
	store := exec.Command("secret-tool", "store", "--label=lm: api_token", "service", keyring.Service, "username", "api_token")
	store.Stdin = strings.NewReader("tok-from-secret-tool")
	if out, err := store.CombinedOutput(); err != nil {
		t.Fatalf("secret-tool store: %v\n%s", err, out)
	}
	if v, err := keyring.Get(ctx, "api_token"); err != nil || v != "tok-from-secret-tool" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if err := keyring.Set(ctx, "api_token", "tok-2\nsecond line"); err != nil {
		t.Fatal(err)
	}
	if v, err := keyring.Get(ctx, "api_token"); err != nil || v != "tok-2\nsecond line" {
		t.Fatalf("Get after Set = %q, %v", v, err)
	}
	if err := keyring.Delete(ctx, "api_token"); err != nil {
		t.Fatal(err)
	}
	if _, err := keyring.Get(ctx, "api_token"); !errors.Is(err, keyring.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := keyring.Delete(ctx, "api_token"); !errors.Is(err, keyring.ErrNotFound) {
		t.Fatalf("Delete of a missing secret: %v", err)
	}
}

func TestNoSessionBusIsUnavailableAtOnce(t *testing.T) {
	keyringtest.NoBus(t)
	start := time.Now()
	_, err := keyring.Get(context.Background(), "api_token")
	var unavailable *keyring.UnavailableError
	if !errors.As(err, &unavailable) || !strings.Contains(err.Error(), "the OS keyring is unavailable: no D-Bus session bus") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("an absent bus took %v to report", d)
	}
}

func TestNoBusAddressStartsNoBus(t *testing.T) {
	if _, err := os.Stat(filepath.Join("/run/user", strconv.Itoa(os.Getuid()), "bus")); err == nil {
		t.Skip("this machine has a session bus at the default path")
	}
	// godbus would run dbus-launch when it finds no bus: a stand-in on
	// PATH records whether it was.
	bin := t.TempDir()
	marker := filepath.Join(bin, "ran")
	if err := os.WriteFile(filepath.Join(bin, "dbus-launch"), []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	_, err := keyring.Get(context.Background(), "api_token")
	if err == nil || !strings.Contains(err.Error(), "DBUS_SESSION_BUS_ADDRESS is not set") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("dbus-launch was run")
	}
}

func TestSilentBusTimesOut(t *testing.T) {
	keyringtest.SilentBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := keyring.Get(ctx, "api_token")
	var unavailable *keyring.UnavailableError
	if !errors.As(err, &unavailable) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("a silent bus held Get for %v", d)
	}
}
