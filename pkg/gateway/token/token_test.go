package token_test

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/gateway/token"
	"lmtool.dev/lm/pkg/op"
)

// Gateways starting at once agree on one person's token.
func TestPersonTokenIsMadeOnce(t *testing.T) {
	home := t.TempDir()
	const starts = 8
	got := make([]string, starts)
	var wg sync.WaitGroup
	for i := range starts {
		wg.Go(func() {
			tok, err := token.Person(home)
			if err != nil {
				t.Error(err)
			}
			got[i] = tok
		})
	}
	wg.Wait()
	for _, tok := range got {
		if tok != got[0] || !strings.HasPrefix(tok, "lmp_") {
			t.Fatalf("concurrent starts made different tokens: %q", got)
		}
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 1 {
		t.Errorf("left behind in LM_HOME: %v", entries)
	}
}

// A token file others can read is made private before it is used; an empty
// one is refused with what to do.
func TestPersonTokenFileIsPrivate(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(token.PersonPath(home), []byte("lmp_chosen\n"), 0o644)
	os.Chmod(token.PersonPath(home), 0o644)
	if tok, err := token.Person(home); err != nil || tok != "lmp_chosen" {
		t.Fatalf("Person = %q, %v", tok, err)
	}
	if info, _ := os.Stat(token.PersonPath(home)); info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	os.WriteFile(token.PersonPath(home), []byte("\n"), 0o600)
	if _, err := token.Person(home); op.KindOf(err) != op.KindInvalid || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("an empty token file: %v", err)
	}
}

// The verifier tells the person from each agent, and follows the agent
// tokens as they are made and revoked.
func TestVerifierIdentifiesCallers(t *testing.T) {
	home := t.TempDir()
	v := token.NewVerifier(home, "lmp_person")
	identify := func(tok string) (op.Caller, bool) {
		t.Helper()
		c, ok, err := v.Identify(tok)
		if err != nil {
			t.Fatal(err)
		}
		return c, ok
	}
	if c, ok := identify("lmp_person"); !ok || c.Role != op.RolePerson || c.Terminal {
		t.Errorf("the person's token: %+v %v", c, ok)
	}
	for _, tok := range []string{"", "lmp_perso", "lmp_person2", "Bearer lmp_person"} {
		if c, ok := identify(tok); ok {
			t.Errorf("%q proved %+v", tok, c)
		}
	}
	claude, err := token.AddAgent(home, "claude", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := identify(claude); !ok || c != (op.Caller{Role: op.RoleAgent, Name: "claude"}) {
		t.Errorf("claude's token: %+v %v", c, ok)
	}
	data, _ := os.ReadFile(token.AgentsPath(home))
	if strings.Contains(string(data), claude) {
		t.Errorf("the agents file holds the token itself: %s", data)
	}
	if err := token.RemoveAgent(home, "claude"); err != nil {
		t.Fatal(err)
	}
	if c, ok := identify(claude); ok {
		t.Errorf("a revoked token still proves %+v", c)
	}
	if err := token.RemoveAgent(home, "claude"); op.KindOf(err) != op.KindNotFound {
		t.Errorf("removing it again: %v", err)
	}
	os.WriteFile(token.AgentsPath(home), []byte("{not json"), 0o600)
	if _, _, err := v.Identify("lma_x"); op.KindOf(err) != op.KindInvalid {
		t.Errorf("a broken agents file: %v", err)
	}
}
