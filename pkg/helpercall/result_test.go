package helpercall

import (
	"encoding/json"
	"strings"
	"testing"
)

type payload struct {
	Text string `json:"text"`
}

func TestEnvelopeShapeAndSavings(t *testing.T) {
	data := payload{Text: strings.Repeat("x", 88)} // encodes to 100 bytes
	out, err := json.Marshal(OK(data, 4100))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	want := map[string]any{
		"success": true, "data": map[string]any{"text": data.Text}, "error": nil, "error_category": nil,
		"recoverable": true, "suggestion": nil, "confidence": 1.0, "tokens_used": 0.0,
		"bytes_read": 4100.0, "tokens_saved": 1000.0, // (4100 read - 100 returned) / 4
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || !equalJSON(g, v) {
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("fields: %s", out)
	}
}

func TestNothingSavedWhenTheAnswerIsLarger(t *testing.T) {
	out, err := json.Marshal(OK(payload{Text: "a long answer from a short input"}, 3))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"bytes_read":3,"tokens_saved":0`) {
		t.Errorf("%s", out)
	}
}

func TestExitCodeTravelsWithTheResult(t *testing.T) {
	r := OK(payload{}, 0).WithExit(8)
	if r.ExitCode() != 8 || !r.Success {
		t.Errorf("%+v", r)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// appended encodes itself onto the envelope's buffer.
type appended struct{ n int }

func (a appended) AppendJSON(b []byte) ([]byte, error) {
	return append(b, `{"n":`+strings.Repeat("1", a.n)+`}`...), nil
}

func TestAppenderDataIsWrittenInPlace(t *testing.T) {
	out, err := json.Marshal(OK(appended{n: 10}, 419)) // data is 16 bytes
	if err != nil {
		t.Fatal(err)
	}
	want := `{"success":true,"data":{"n":1111111111},"error":null,"error_category":null,"recoverable":true,` +
		`"suggestion":null,"confidence":1,"tokens_used":0,"bytes_read":419,"tokens_saved":100}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}
