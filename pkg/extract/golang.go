package extract

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"strconv"
)

// scanGo reads a Go file exactly with go/parser.
func scanGo(src []byte) (*Symbols, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	s := &Symbols{}
	var exports exportSet
	imports, funcs, types := []Import{}, []Function{}, []TypeDecl{}
	line := func(p token.Pos) int { return fset.Position(p).Line }
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		items := []string{}
		if im.Name != nil {
			items = append(items, im.Name.Name)
		}
		imports = append(imports, Import{From: path, Items: items, Line: line(im.Pos()), Kind: "import"})
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				name = receiverType(d.Recv.List[0].Type) + "." + name
			} else if d.Name.IsExported() {
				exports.add(name, line(d.Pos())) // the func keyword, not its doc comment
			}
			funcs = append(funcs, Function{Name: name, Line: line(d.Pos()), Params: goParams(fset, d.Type.Params)})
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					kind := "type"
					switch {
					case sp.Assign.IsValid():
						kind = "alias"
					default:
						switch sp.Type.(type) {
						case *ast.StructType:
							kind = "struct"
						case *ast.InterfaceType:
							kind = "interface"
						}
					}
					types = append(types, TypeDecl{Name: sp.Name.Name, Kind: kind, Line: line(sp.Pos())})
					if sp.Name.IsExported() {
						exports.add(sp.Name.Name, line(sp.Pos()))
					}
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						if n.IsExported() {
							exports.add(n.Name, line(n.Pos()))
						}
					}
				}
			}
		}
	}
	exports.into(s)
	s.Imports, s.Functions, s.Types = &imports, &funcs, &types
	return s, nil
}

func receiverType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiverType(t.X)
	case *ast.IndexExpr:
		return receiverType(t.X)
	case *ast.IndexListExpr:
		return receiverType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// goParams renders each parameter as "name type".
func goParams(fset *token.FileSet, fl *ast.FieldList) []string {
	params := []string{}
	if fl == nil {
		return params
	}
	for _, field := range fl.List {
		var typ bytes.Buffer
		printer.Fprint(&typ, fset, field.Type)
		if len(field.Names) == 0 {
			params = append(params, typ.String())
		}
		for _, n := range field.Names {
			params = append(params, n.Name+" "+typ.String())
		}
	}
	return params
}
