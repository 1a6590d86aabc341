package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/model"
	"lmtool.dev/lm/pkg/op"
)

// judge asks the configured model about semantic checks. Once the model
// proves unreachable (not configured, down, missing, too slow) the
// remaining semantic checks report the same error without asking again.
type judge struct {
	client    *model.Client
	threshold float64
	err       error
	tokens    int
	// confidence is the lowest confidence of any judged check (1 if none).
	confidence float64
}

func newJudge(env *op.Env) *judge {
	j := &judge{confidence: 1}
	cfg, err := model.Load(env.Home, env.LookupEnv)
	if err == nil {
		j.client, err = model.New(cfg)
		j.threshold = cfg.ConfidenceThreshold
	}
	j.err = err
	return j
}

// verdict is the answer the model must give, spec 001's verify template
// with the model's confidence.
type verdict struct {
	Status     string  `json:"status" jsonschema:"pass or fail"`
	Evidence   string  `json:"evidence" jsonschema:"line N: the code that shows it, or not found"`
	Reason     *string `json:"reason" jsonschema:"null, or why it failed"`
	Confidence float64 `json:"confidence" jsonschema:"how sure you are, 0 to 1"`
}

var verdictSchema = func() *jsonschema.Schema {
	s, err := jsonschema.For[verdict](nil)
	if err != nil {
		panic(err)
	}
	s.Properties["status"].Enum = []any{"pass", "fail"}
	s.Properties["confidence"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["confidence"].Maximum = jsonschema.Ptr(1.0)
	return s
}()

// maxPromptBytes keeps a file within a small model's context window
// (about 12k tokens); the prompt says when a file was cut.
const maxPromptBytes = 48 << 10

const judgeRules = `You are a code verification tool. Check if the condition is satisfied by the file.
Reply with only JSON: {"status": "pass" or "fail", "evidence": "line N: <relevant code>" or "not found", "reason": null or "why it failed", "confidence": 0 to 1}.
Rules: evidence must quote a line of the file with its number; do not explain beyond the structured output.`

// check judges one semantic check against the file's content.
func (j *judge) check(ctx context.Context, c Check, content []byte) (Result, error) {
	if j.err != nil {
		return modelError(j.err), nil
	}
	res, err := j.client.Chat(ctx, model.Request{
		Messages: []model.Message{{Role: "system", Content: judgeRules}, {Role: "user", Content: prompt(c, content)}},
		Format:   verdictSchema,
		Accept:   quotesTheFile(c.File, content),
	})
	j.tokens += res.TokensUsed
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		if op.EnvelopeOf(err).ErrorCategory != model.CategoryInvalidOutput {
			j.err = err // the model itself is the problem: do not ask again
		}
		return modelError(err), nil
	}
	var v verdict
	if err := json.Unmarshal(res.JSON, &v); err != nil {
		return Result{}, fmt.Errorf("verify: decode the model's verdict: %w", err)
	}
	j.confidence = min(j.confidence, v.Confidence)
	evidence, _ := grounded(content, v.Evidence) // Accept made sure it is
	r := Result{Status: v.Status, Evidence: evidence, Confidence: &v.Confidence}
	if v.Reason != nil && v.Status == "fail" {
		r.Reason = *v.Reason
	}
	if v.Confidence < j.threshold {
		r.Reason = fmt.Sprintf("low confidence %.2f (threshold %.2f): manual review needed; the model judged %s", v.Confidence, j.threshold, v.Status)
		if v.Reason != nil && *v.Reason != "" {
			r.Reason += ": " + *v.Reason
		}
		r.Status, r.ErrorCategory = "error", "low_confidence"
	}
	return r, nil
}

func modelError(err error) Result {
	e := op.EnvelopeOf(err)
	reason := e.Error
	if e.Suggestion != "" {
		reason += " (" + e.Suggestion + ")"
	}
	return Result{Status: "error", Evidence: "not judged", Reason: reason, ErrorCategory: e.ErrorCategory}
}

// prompt is spec 001's verify template with the file's lines numbered, so
// the model can cite them.
func prompt(c Check, content []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CHECK %s: %s\nFILE: %s\nCONDITION: semantic %q\n\nFILE CONTENT:\n", c.ID, c.Description, c.File, c.Condition.Value)
	body := content
	if len(body) > maxPromptBytes {
		body = body[:maxPromptBytes]
	}
	for i, line := range strings.Split(string(body), "\n") {
		fmt.Fprintf(&b, "%d| %s\n", i+1, line)
	}
	if len(body) < len(content) {
		fmt.Fprintf(&b, "(the file continues for %d more bytes, not shown)\n", len(content)-len(body))
	}
	return b.String()
}

// quotesTheFile rejects a verdict whose evidence is not in the file, so an
// invented quotation goes back to the model as a correction, and after
// max_retries is invalid_output, never a verdict. A reply that is not a
// verdict at all is left for the schema to reject.
func quotesTheFile(file string, content []byte) func(string) (string, error) {
	return func(reply string) (string, error) {
		var v verdict
		if json.Unmarshal([]byte(reply), &v) != nil {
			return reply, nil
		}
		if _, ok := grounded(content, v.Evidence); !ok {
			return "", fmt.Errorf("the evidence %q does not occur in %s: quote one line of the file exactly, as \"line N: <code>\", or give \"not found\"", v.Evidence, file)
		}
		return reply, nil
	}
}

var citation = regexp.MustCompile(`^\s*line (\d+):\s*(.*?)\s*$`)

// grounded replaces the model's quotation with the file's own text, so
// evidence is never invented: the cited line when it holds the quoted code,
// else the first line that does. It reports false for a quotation found
// nowhere in the file.
func grounded(content []byte, cited string) (string, bool) {
	m := citation.FindStringSubmatch(cited)
	if m == nil {
		return "not found", strings.TrimSpace(cited) == "not found"
	}
	line, _ := strconv.Atoi(m[1])
	quote := m[2]
	lines := bytes.Split(content, []byte{'\n'})
	if quote == "" {
		return "", false
	}
	if line >= 1 && line <= len(lines) && bytes.Contains(lines[line-1], []byte(quote)) {
		return lineEvidence(content, line), true
	}
	if at := bytes.Index(content, []byte(quote)); at >= 0 {
		return evidence(content, at), true
	}
	return "", false
}
