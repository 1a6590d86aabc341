# Prints the classes and imports Python's own parser finds in each file, as
# lm's extract reports them: [name, line] and [module, line], sorted.
import ast, json, sys

out = {}
for path in sys.argv[1:]:
    tree = ast.parse(open(path, 'rb').read())
    classes = sorted([n.name, n.lineno] for n in ast.walk(tree) if isinstance(n, ast.ClassDef))
    imports = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            imports += [[a.name, n.lineno] for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            imports.append(['.' * n.level + (n.module or ''), n.lineno])
    out[path] = {'classes': classes, 'imports': sorted(imports)}
print(json.dumps(out, indent=1, sort_keys=True))
