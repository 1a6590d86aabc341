package registry

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// processDoors are what op.Env stands in for: the serving process's streams
// and environment, which belong to the transport (lm mcp's stdin and stdout
// are JSON-RPC) and to the person who started it.
var processDoors = map[string]string{
	"Stdin":     "env.Stdin",
	"Stdout":    "env.Stdout",
	"Getenv":    "env.Getenv",
	"LookupEnv": "env.LookupEnv",
	"Environ":   "env.Environ",
}

// doorKeepers may use them, each for a reason that is not a handler's.
var doorKeepers = map[string]string{
	"store":       "locates the store for the faces, which build op.Env from it",
	"npmtest":     "test support: whether CI requires node",
	"keyring":     "talks to the person's D-Bus session, found through the process environment",
	"keyringtest": "test support: a private keyring daemon",
	"pgtest":      "test support: whether CI requires PostgreSQL",
}

// TestHandlersUseEnvAsTheirOnlyDoor: no package under pkg/ reaches
// os.Stdin, os.Stdout or the process environment in non-test code; they
// come through op.Env, so a handler serving an agent cannot read the
// transport's stdin or the serving process's secrets by accident.
func TestHandlersUseEnvAsTheirOnlyDoor(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if _, kept := doorKeepers[filepath.Base(filepath.Dir(path))]; kept {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		osName := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"os"` {
				osName = "os"
				if imp.Name != nil {
					osName = imp.Name.Name
				}
			}
		}
		if osName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == osName {
				if instead, door := processDoors[sel.Sel.Name]; door {
					t.Errorf("%s: os.%s; use %s", fset.Position(sel.Pos()), sel.Sel.Name, instead)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: is the walk rooted at pkg/?", checked)
	}
}
