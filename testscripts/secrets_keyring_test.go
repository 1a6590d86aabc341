package testscripts

import (
	"context"
	"errors"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/servers/keyring"
	"lmtool.dev/lm/pkg/servers/keyring/keyringtest"
)

// TestSecretCommandsWithTheOSKeyring drives lm servers secret against a
// real Secret Service (gnome-keyring on a private session bus).
func TestSecretCommandsWithTheOSKeyring(t *testing.T) {
	keyringtest.Start(t)
	home := t.TempDir()
	runLM(t, home, "", "servers", "add", "api", "--env", "TOKEN=${secret:api_token}", "--", "true")
	expect := func(out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %s: %s", w, out)
			}
		}
		if strings.Contains(out, "tok-") {
			t.Errorf("a value was printed: %s", out)
		}
	}

	out, _ := runLM(t, home, "tok-keyring\n", "servers", "secret", "set", "api_token")
	expect(out, `"in":["keyring"]`)
	if v, err := keyring.Get(context.Background(), "api_token"); err != nil || v != "tok-keyring" {
		t.Fatalf("the keyring holds %q, %v", v, err)
	}
	out, _ = runLM(t, home, "", "servers", "secret", "list")
	expect(out, `{"name":"api_token","in":["keyring"],"used_by":["api"]}`)
	if strings.Contains(out, "keyring_unavailable") {
		t.Errorf("the keyring was reported unavailable: %s", out)
	}

	// The file is looked up first: storing in the keyring then warns.
	runLM(t, home, "tok-file", "servers", "secret", "set", "api_token", "--file")
	out, _ = runLM(t, home, "", "servers", "secret", "list")
	expect(out, `"in":["file","keyring"]`)
	out, _ = runLM(t, home, "tok-keyring-2", "servers", "secret", "set", "api_token", "--keyring")
	expect(out, "is looked up first, so servers get that value: lm servers secret rm api_token --file")

	out, _ = runLM(t, home, "", "servers", "secret", "rm", "api_token")
	expect(out, `"in":["file","keyring"]`)
	if _, err := keyring.Get(context.Background(), "api_token"); !errors.Is(err, keyring.ErrNotFound) {
		t.Fatalf("after rm the keyring answers %v", err)
	}
}
