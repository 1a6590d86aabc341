package servers

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/servers/keyring"
	"lmtool.dev/lm/pkg/servers/keyring/keyringtest"
)

// writeSecrets writes home's secrets file.
func writeSecrets(t *testing.T, home, json string) {
	t.Helper()
	if err := os.WriteFile(SecretsPath(home), []byte(json), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSecretsFileFirstThenKeyring(t *testing.T) {
	keyringtest.Start(t)
	ctx := context.Background()
	for name, v := range map[string]string{"both": "from-keyring", "keyring_only": "kr-value"} {
		if err := keyring.Set(ctx, name, v); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	writeSecrets(t, home, `{"both": "from-file"}`)
	s := NewSecrets(home)
	for name, want := range map[string]string{"both": "from-file", "keyring_only": "kr-value"} {
		if v, err := s.Lookup(ctx, name); err != nil || v != want {
			t.Errorf("Lookup(%s) = %q, %v; want %q", name, v, err, want)
		}
	}
	_, err := s.Lookup(ctx, "nowhere")
	want := "secret nowhere is in neither " + SecretsPath(home) + ` nor the OS keyring (service "lm")`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
}

func TestSecretsWithoutKeyring(t *testing.T) {
	keyringtest.NoBus(t)
	home := t.TempDir()
	writeSecrets(t, home, `{"api_token": "tok-123"}`)
	s := NewSecrets(home)
	if v, err := s.Lookup(context.Background(), "api_token"); err != nil || v != "tok-123" {
		t.Fatalf("a secret in the file: %q, %v", v, err)
	}
	_, err := s.Lookup(context.Background(), "other")
	if err == nil || !strings.HasPrefix(err.Error(), "secret other is not in "+SecretsPath(home)+", and the OS keyring is unavailable: no D-Bus session bus") {
		t.Fatalf("err = %v", err)
	}
}

func TestSecretsSilentKeyringIsBounded(t *testing.T) {
	keyringtest.SilentBus(t)
	home := t.TempDir()
	writeSecrets(t, home, `{"api_token": "tok-123"}`)
	s := NewSecrets(home)
	ctx := context.Background()
	start := time.Now()
	if v, err := s.Lookup(ctx, "api_token"); err != nil || v != "tok-123" || time.Since(start) > time.Second {
		t.Fatalf("a secret in the file: %q, %v after %v", v, err, time.Since(start))
	}
	// Two names the file lacks wait for the keyring once, not twice.
	for _, name := range []string{"a", "b"} {
		_, err := s.Lookup(ctx, name)
		if err == nil || !strings.HasSuffix(err.Error(), "the OS keyring is unavailable: no answer within 5s") {
			t.Fatalf("%s: err = %v", name, err)
		}
	}
	if d := time.Since(start); d > keyring.Timeout+2*time.Second {
		t.Fatalf("the lookups took %v", d)
	}
}
