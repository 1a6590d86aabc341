package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

// The call history keeps the newest historyLimit calls.
func TestHistoryKeepsTheNewest(t *testing.T) {
	defer func(limit int) { historyLimit = limit }(historyLimit)
	historyLimit = 3
	path := filepath.Join(t.TempDir(), "lm.db")
	env := &op.Env{Store: store.New(path, 5*time.Second), Home: filepath.Dir(path), Stderr: io.Discard, Now: time.Now}
	ctx := context.Background()
	for i := range 5 {
		if _, err := record(ctx, env, Record{Tool: fmt.Sprintf("call-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := history(ctx, env, func(Record) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, r := range got {
		tools = append(tools, r.Tool)
	}
	if fmt.Sprint(tools) != "[call-2 call-3 call-4]" {
		t.Fatalf("history after 5 calls with a limit of 3: %v", tools)
	}
}

// What history and favourites keep of a URL target holds no credential:
// not the bearer token, a key in a header, the URL's password or a token
// in its query. Such a target cannot be run again (the credentials are
// gone), and says so before it connects anywhere.
func TestStoredTargetsKeepNoCredential(t *testing.T) {
	secrets := []string{"bearer-s3cret", "header-s3cret", "password-s3cret", "query-s3cret", "sig-s3cret"}
	target, err := httpTarget("https://ada:password-s3cret@mcp.example/mcp?api_key=query-s3cret&sig=sig-s3cret&workspace=w1",
		[]string{"X-Api-Key: header-s3cret", "X-Workspace: w1"}, "bearer-s3cret", "")
	if err != nil {
		t.Fatal(err)
	}
	kept := target.withoutSecrets()
	stored, _ := json.Marshal(kept)
	for _, s := range secrets {
		if strings.Contains(string(stored), s) {
			t.Errorf("the stored target holds %s: %s", s, stored)
		}
	}
	if kept.URL != "https://ada@mcp.example/mcp?workspace=w1" || kept.Headers["X-Workspace"] != "w1" {
		t.Errorf("the stored target lost what it may keep: %s", stored)
	}
	_, err = runSaved(context.Background(), &op.Env{}, kept, "bearer-s3cret", "echo", nil)
	if op.KindOf(err) != op.KindInvalid || !strings.Contains(fmt.Sprint(err), "header X-Api-Key") {
		t.Errorf("running the stored target again: %v", err)
	}
	// A target that needs only the bearer token is kept whole otherwise.
	plain, _ := httpTarget("http://127.0.0.1:3001/mcp", nil, "bearer-s3cret", "")
	if kept := plain.withoutSecrets(); kept.URL != plain.URL || len(kept.Dropped) > 0 || len(kept.Headers) > 0 {
		t.Errorf("a bearer-only target kept as %+v", kept)
	}
}

// A name is a credential's by its words: api_key, X-Auth-Token and
// accessToken are; author, keyword and passage are not. A URL without one
// is quoted as it was given, its query untouched.
func TestCredentialNamesGoByWords(t *testing.T) {
	for name, want := range map[string]bool{
		"api_key": true, "X-Auth-Token": true, "accessToken": true, "apikey": true, "Authorization": true,
		"code": true, "sig": true, "Cookie": true,
		"author": false, "keyword": false, "passage": false, "monkey": false, "lang": false,
	} {
		if got := credentialName(name); got != want {
			t.Errorf("credentialName(%q) = %v, want %v", name, got, want)
		}
	}
	plain := Target{URL: "https://example.com/mcp?b=1&a=2&x"}
	if got := plain.String(); got != plain.URL {
		t.Errorf("a URL without credentials is quoted as %q", got)
	}
	secret := Target{URL: "https://example.com/mcp?b=1&api_key=hunter2"}
	if got := secret.String(); strings.Contains(got, "hunter2") || !strings.Contains(got, "api_key=***") {
		t.Errorf("a URL with a key is quoted as %q", got)
	}
}
