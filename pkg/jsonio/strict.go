package jsonio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DecodeStrict decodes the one JSON value in data into v as lm reads every
// document a person or a model writes: a field v does not have is refused
// (a misspelled field is a mistake, not something to ignore), so is
// anything after the value, and the error says in words what was wrong and
// where — `unknown field "tags"`, `field "a": want number, got string` —
// for the caller to wrap with what it accepts.
func DecodeStrict(data []byte, v any) error { return decodeStrict(data, v, false) }

// DecodeStrictNumbers is DecodeStrict keeping numbers in untyped places
// (any, map[string]any) as json.Number, so a value passed on to another
// program keeps its exact digits.
func DecodeStrictNumbers(data []byte, v any) error { return decodeStrict(data, v, true) }

func decodeStrict(data []byte, v any, numbers bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if numbers {
		dec.UseNumber()
	}
	if err := dec.Decode(v); err != nil {
		return explain(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("unexpected data after the JSON value at byte %d", dec.InputOffset())
	}
	return nil
}

// explain rewords encoding/json's errors for people.
func explain(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Errorf("field %q: want %s, got %s", typeErr.Field, typeErr.Type, typeErr.Value)
	case errors.As(err, &typeErr):
		return fmt.Errorf("want %s, got %s", typeErr.Type, typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("not valid JSON at byte %d: %s", syntaxErr.Offset, strings.TrimPrefix(syntaxErr.Error(), "json: "))
	case errors.Is(err, io.EOF):
		return errors.New("no JSON value")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the JSON value ends early")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}
