package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"
)

// reflected encodes v with encoding/json's reflection, as jsonio does (no
// HTML escaping): the reference the hand encoder must match byte for byte.
func reflected(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// plainData is Data without its MarshalJSON.
type plainData Data

func TestDataMarshalJSONMatchesReflection(t *testing.T) {
	exports, funcs := []string{"a<b"}, []Function{{Name: "f", Line: 2, Params: []string{}}}
	results := map[string]FileResult{
		"p/ü\u2028.go": {Found: true, LineNumbers: []int{1, 3}, Truncated: true, Matches: []Match{
			{Pattern: `"\w+`, Line: 1, Column: 2, Match: "x\x00\x1f\x7f", Text: "\b\f\n\r\t\\ \xff <&>"},
			{Pattern: "é", Line: 3, Column: 1, Match: "\u2029", Text: ""},
		}},
		"fm.md": {Found: true, Format: "yaml", Data: map[string]any{"b": []any{1, "<x>"}, "a": nil},
			Lines: map[string]int{"a": 1, "b": 2}, LineNumbers: []int{1}, Cached: true},
		"code.ts":  {Found: true, Language: "typescript", Symbols: &Symbols{Exports: &exports, Functions: &funcs}},
		"empty.ts": {Found: true, Language: "typescript", Symbols: &Symbols{}},
		"dep.go":   {Found: true, Dependencies: &Dependencies{Internal: []string{"x"}}},
		"bad.rb":   failed("unsupported_language", errUnsupported("bad.rb")),
	}
	// Every field of FileResult is set in some result: a field added later
	// and forgotten by the hand encoder fails here.
	rt := reflect.TypeFor[FileResult]()
	for i := range rt.NumField() {
		set := false
		for _, r := range results {
			set = set || !reflect.ValueOf(r).Field(i).IsZero()
		}
		if !set {
			t.Errorf("no result sets FileResult.%s", rt.Field(i).Name)
		}
	}
	d := Data{TaskType: "pattern_match", Results: results, Stats: Stats{Files: 6, Found: 5, Failed: 1}}
	if got, want := reflected(t, d), reflected(t, plainData(d)); !bytes.Equal(got, want) {
		t.Errorf("hand encoder:\n%s\nreflection:\n%s", got, want)
	}
}

// TestBigAnswerEncodedInPartsMatchesReflection checks the parts encoded in
// parallel join into what encoding/json writes for the whole.
func TestBigAnswerEncodedInPartsMatchesReflection(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	results := map[string]FileResult{}
	for i := range 4*encodedPerPart + 7 {
		name := fmt.Sprintf("d%d/file%d.go", i%13, i)
		switch i % 3 {
		case 0:
			results[name] = FileResult{Found: true, LineNumbers: []int{i}, Matches: []Match{{Pattern: "x", Line: i, Column: 1, Match: "x", Text: name}}}
		case 1:
			results[name] = failed("binary_file", errors.New("skipped: binary file"))
		default:
			results[name] = FileResult{}
		}
	}
	if parts := encodingParts(len(results)); parts != 4 {
		t.Fatalf("%d results encode in %d parts, want 4", len(results), parts)
	}
	d := Data{TaskType: "pattern_match", Results: results, Stats: Stats{Files: len(results)}}
	if got, want := reflected(t, d), reflected(t, plainData(d)); !bytes.Equal(got, want) {
		t.Errorf("encoded in parts: %d bytes, reflection %d bytes, and they differ", len(got), len(want))
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\x00\x1f\x7f", "\u2028\u2029é", "\xff\xc3", "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := appendString(nil, s), reflected(t, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}
