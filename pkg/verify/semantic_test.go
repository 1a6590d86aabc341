package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"lmtool.dev/lm/pkg/op"
)

const store = "import { create } from 'zustand';\nexport const useStore = create(persist(() => ({})));\nexport function load() { return fetch('/api'); }\n"

// fakeOllama answers /api/chat with the verdict scripted for the check id
// found in the prompt, as Ollama does with stream false.
func fakeOllama(t *testing.T, verdicts map[string]string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	checkID := regexp.MustCompile(`CHECK (\S+):`)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Model    string
			Format   map[string]any
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/api/chat" {
			t.Errorf("request to %s: %v", r.URL.Path, err)
		}
		if req.Model == "missing" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"model \"missing\" not found, try pulling it first"}`))
			return
		}
		if req.Format["type"] != "object" {
			t.Errorf("no schema in format: %v", req.Format)
		}
		id := checkID.FindStringSubmatch(req.Messages[1].Content)
		if id == nil {
			t.Errorf("prompt names no check: %q", req.Messages)
			return
		}
		// "ID#N" scripts the answer to the Nth correction of a check.
		answer, ok := verdicts[fmt.Sprintf("%s#%d", id[1], (len(req.Messages)-2)/2)]
		if !ok {
			answer = verdicts[id[1]]
		}
		json.NewEncoder(w).Encode(map[string]any{
			"message": map[string]any{"role": "assistant", "content": answer},
			"done":    true, "prompt_eval_count": 100, "eval_count": 20,
		})
	}))
	t.Cleanup(s.Close)
	return s, &calls
}

func runSemantic(t *testing.T, url, modelName string, checks ...Check) Output {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "store.ts"), []byte(store), 0o644); err != nil {
		t.Fatal(err)
	}
	// The model is the caller's to configure, through its environment.
	environ := []string{"LM_MODEL=" + modelName, "LM_MODEL_URL=" + url, "LM_MODEL_PROVIDER=ollama"}
	in := Input{Root: root, Checks: checks}
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := Verify(context.Background(), &op.Env{Home: t.TempDir(), Environ: environ, Caller: op.Person()}, in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func semanticCheck(id, claim string) Check {
	return Check{ID: id, Description: claim, File: "store.ts", Condition: Condition{Type: "semantic", Value: claim}}
}

func TestSemanticChecksAreJudgedByTheModel(t *testing.T) {
	s, calls := fakeOllama(t, map[string]string{
		"S1": `{"status":"pass","evidence":"line 2: create(persist(","reason":null,"confidence":0.9}`,
		"S2": `{"status":"fail","evidence":"line 3: fetch('/api')","reason":"no retry around fetch","confidence":0.95}`,
		"S3": `{"status":"pass","evidence":"line 7: persist","reason":null,"confidence":0.4}`,
	})
	out := runSemantic(t, s.URL, "qwen2.5-coder:7b",
		semanticCheck("S1", "the store is persisted"),
		semanticCheck("S2", "load retries on failure"),
		semanticCheck("S3", "state survives reloads"),
		Check{ID: "C1", File: "store.ts", Condition: Condition{Type: "contains", Value: "zustand"}},
	)
	r := out.Data.Results
	if r[0].Status != "pass" || r[0].Evidence != "line 2: export const useStore = create(persist(() => ({})));" || *r[0].Confidence != 0.9 {
		t.Errorf("S1 = %+v", r[0])
	}
	if r[1].Status != "fail" || r[1].Reason != "no retry around fetch" || r[1].Evidence != "line 3: export function load() { return fetch('/api'); }" {
		t.Errorf("S2 = %+v", r[1])
	}
	// below the threshold: not a verdict, and the cited line 7 does not
	// exist, so the evidence points where "persist" really is
	if r[2].Status != "error" || r[2].ErrorCategory != "low_confidence" || r[2].Evidence != "line 2: export const useStore = create(persist(() => ({})));" ||
		r[2].Reason != "low confidence 0.40 (threshold 0.70): manual review needed; the model judged pass" {
		t.Errorf("S3 = %+v", r[2])
	}
	if r[3].Status != "pass" {
		t.Errorf("C1 = %+v", r[3])
	}
	if out.Data.Passed != 2 || out.Data.Failed != 1 || out.Data.Errors != 1 || out.ExitCode() != 8 {
		t.Errorf("counts %+v, exit %d", out.Data, out.ExitCode())
	}
	if out.TokensUsed != 360 || out.Confidence != 0.4 || calls.Load() != 3 {
		t.Errorf("tokens %d, confidence %g, calls %d", out.TokensUsed, out.Confidence, calls.Load())
	}
}

func TestAMissingModelIsAskedOnce(t *testing.T) {
	s, calls := fakeOllama(t, nil)
	out := runSemantic(t, s.URL, "missing", semanticCheck("S1", "a"), semanticCheck("S2", "b"),
		Check{ID: "C1", File: "store.ts", Condition: Condition{Type: "contains", Value: "zustand"}})
	for _, r := range out.Data.Results[:2] {
		if r.Status != "error" || r.ErrorCategory != "model_not_loaded" || r.Reason == "" {
			t.Errorf("%s = %+v", r.ID, r)
		}
	}
	if out.Data.Results[2].Status != "pass" || calls.Load() != 1 {
		t.Errorf("C1 = %+v, %d calls", out.Data.Results[2], calls.Load())
	}
}

func TestWithoutAModelSemanticChecksAreUnavailable(t *testing.T) {
	out := runSemantic(t, "", "", semanticCheck("S1", "a"))
	if r := out.Data.Results[0]; r.Status != "error" || r.ErrorCategory != "model_unavailable" {
		t.Errorf("S1 = %+v", r)
	}
	if out.Confidence != 1 || out.TokensUsed != 0 {
		t.Errorf("envelope %+v", out)
	}
}

func TestGroundedEvidence(t *testing.T) {
	content := []byte("a\n  b := 1\nc\n")
	for cited, want := range map[string]string{
		"line 2: b := 1":   "line 2: b := 1",
		"line 1: b := 1":   "line 2: b := 1",
		"line 40: c":       "line 3: c",
		"line 2: invented": "",
		"line 2:":          "",
		"somewhere":        "",
		"not found":        "not found",
	} {
		got, ok := grounded(content, cited)
		if ok != (want != "") || (ok && got != want) {
			t.Errorf("grounded(%q) = %q, %v; want %q", cited, got, ok, want)
		}
	}
}

// Evidence the file does not hold is never a verdict: the model is told
// what was wrong and asked again, and after max_retries the check is an
// error invalid_output.
func TestInventedEvidenceIsRetriedNeverPassed(t *testing.T) {
	invented := `{"status":"pass","evidence":"line 7: this text is not in the file","reason":null,"confidence":0.95}`
	s, calls := fakeOllama(t, map[string]string{
		"S1": invented, // every attempt
		"S2": invented, "S2#1": `{"status":"pass","evidence":"line 2: persist(() =>","reason":null,"confidence":0.9}`,
	})
	var corrections []string
	s.Config.Handler = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if i := strings.Index(string(body), "PREVIOUS OUTPUT WAS INVALID"); i >= 0 {
				corrections = append(corrections, string(body[i:min(len(body), i+200)]))
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
		})
	}(s.Config.Handler)
	out := runSemantic(t, s.URL, "qwen2.5-coder:7b", semanticCheck("S1", "the store is persisted"), semanticCheck("S2", "the store is persisted"))
	r := out.Data.Results
	if r[0].Status != "error" || r[0].ErrorCategory != "invalid_output" || !strings.Contains(r[0].Reason, "does not occur in store.ts") {
		t.Errorf("S1 = %+v", r[0])
	}
	if r[1].Status != "pass" || r[1].Evidence != "line 2: export const useStore = create(persist(() => ({})));" {
		t.Errorf("S2 = %+v", r[1])
	}
	// S1: the first attempt and max_retries (2) corrections; S2: one correction
	if calls.Load() != 5 || len(corrections) != 3 || !strings.Contains(corrections[0], "this text is not in the file") {
		t.Errorf("%d calls, corrections %q", calls.Load(), corrections)
	}
	if out.Data.Passed != 1 || out.Data.Errors != 1 || out.ExitCode() != 8 {
		t.Errorf("counts %+v, exit %d", out.Data, out.ExitCode())
	}
}
