package client

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/table"
)

// The summary fits one screen: a line for the server, some tools, some
// example requests.
const (
	summaryTools    = 8
	summaryExamples = 3
	summaryWidth    = 78
)

// showSummary tells the person what they are asking before the model is:
// the server's name and version, its tools, and requests it could serve.
func showSummary(w io.Writer, target Target, init *mcp.InitializeResult, tools []mcp.Tool) {
	server := ""
	if init != nil {
		server = strings.TrimSpace(init.ServerInfo.Name + " " + init.ServerInfo.Version)
	}
	label := clip(target.String(), summaryWidth/2)
	if server != "" && server != label {
		label += " (" + server + ")"
	}
	fmt.Fprintf(w, "lm: asking %s, %d %s\n", table.Printable(label), len(tools), plural(len(tools), "tool", "tools"))
	for _, t := range tools[:min(len(tools), summaryTools)] {
		line := "  " + t.Name
		if d := firstLine(t.Description); d != "" {
			line += " — " + d
		}
		fmt.Fprintln(w, table.Printable(clip(line, summaryWidth)))
	}
	if more := len(tools) - summaryTools; more > 0 {
		fmt.Fprintf(w, "  … and %d more (lm servers tools)\n", more)
	}
	if examples := exampleRequests(tools, summaryExamples); len(examples) > 0 {
		fmt.Fprintln(w, "lm: for example:")
		for _, e := range examples {
			fmt.Fprintln(w, table.Printable(clip("  "+e, summaryWidth)))
		}
	}
}

// exampleRequests builds up to n requests a model can turn into a call:
// "use TOOL with NAME = VALUE and …", from tools whose required arguments
// all have a simple type, with a value their schema suggests.
func exampleRequests(tools []mcp.Tool, n int) []string {
	var out []string
	for _, t := range tools {
		if len(out) == n {
			break
		}
		s, err := schemaOf(t)
		if err != nil {
			continue
		}
		if e, ok := exampleRequest(t.Name, s); ok {
			out = append(out, e)
		}
	}
	return out
}

func exampleRequest(tool string, s *jsonschema.Schema) (string, bool) {
	var args []string
	number := 0
	for _, name := range s.Required {
		v, ok := sampleValue(s.Properties[name], &number)
		if !ok {
			return "", false
		}
		args = append(args, name+" = "+v)
	}
	if len(args) == 0 {
		return "use " + tool, true
	}
	return "use " + tool + " with " + strings.Join(args, " and "), true
}

// sampleValue is a value for an argument as JSON text: its first enum
// value, example or default, else one of its type (numbers count up, so
// two of them differ).
func sampleValue(p *jsonschema.Schema, number *int) (string, bool) {
	if p == nil {
		return "", false
	}
	for _, v := range [][]any{p.Enum, p.Examples} {
		if len(v) > 0 {
			data, err := json.Marshal(v[0])
			return string(data), err == nil
		}
	}
	if len(p.Default) > 0 {
		return string(p.Default), true
	}
	types := op.SchemaTypes(p)
	switch {
	case slices.Contains(types, "integer"), slices.Contains(types, "number"):
		*number++
		return fmt.Sprint(*number), true
	case slices.Contains(types, "string"):
		return `"hello"`, true
	case slices.Contains(types, "boolean"):
		return "true", true
	}
	return "", false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// clip cuts s to width characters, marking the cut.
func clip(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	return string([]rune(s)[:width-1]) + "…"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
