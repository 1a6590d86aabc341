// Package config reads $LM_HOME/config.toml, the settings a person edits
// by hand. Each part of lm owns one table ([model], [jobs]) and reads only
// that one, strictly: a key its table does not know is an error naming the
// line (a typo must not silently fall back to a default), while the other
// tables are left to their owners.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Path is where the settings live.
func Path(home string) string { return filepath.Join(home, "config.toml") }

// Table decodes table name of home's config.toml into v, a pointer to a
// struct with toml tags. A missing file or table leaves v as it was.
// Errors name the file and the line.
func Table(home, name string, v any) error {
	path := Path(home)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := decode(data, name, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// decode reads data's table name into v, strictly within that table.
func decode(data []byte, name string, v any) error {
	// The document as a struct with the one table as its only field, so
	// the decoder reports unknown keys: the table's own are errors.
	file := reflect.New(reflect.StructOf([]reflect.StructField{{
		Name: "Table", Type: reflect.TypeOf(v), Tag: reflect.StructTag(fmt.Sprintf("toml:%q", name)),
	}}))
	file.Elem().Field(0).Set(reflect.ValueOf(v))
	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(file.Interface())
	var strict *toml.StrictMissingError
	var bad *toml.DecodeError
	switch {
	case errors.As(err, &strict):
		var unknown []string
		for _, e := range strict.Errors {
			if k := e.Key(); len(k) > 1 && k[0] == name {
				row, _ := e.Position()
				unknown = append(unknown, fmt.Sprintf("line %d: unknown key %s", row, strings.Join(k, ".")))
			}
		}
		if len(unknown) > 0 {
			return errors.New(strings.Join(unknown, "; "))
		}
		return nil
	case errors.As(err, &bad):
		row, col := bad.Position()
		return fmt.Errorf("line %d column %d: %v", row, col, bad)
	}
	return err
}
