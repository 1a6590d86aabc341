package tasks

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// listed discovers dir's tasks as "name runner command" lines, failing on
// any problem.
func listed(t *testing.T, dir string) []string {
	t.Helper()
	tasks, problems, err := discover(dir, false)
	if err != nil || len(problems) > 0 {
		t.Fatalf("discover: %v %v", err, problems)
	}
	var out []string
	for _, task := range tasks {
		out = append(out, task.Name+" "+task.Runner+" "+task.Command)
	}
	return out
}

func TestMakefileChoiceAndIncludes(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		// GNU make reads GNUmakefile first, then makefile, then Makefile.
		"GNUmakefile": "include mk/a.mk\n-include mk/b.mk mk/missing.mk\nsinclude mk/c*.mk\nall:\n",
		"makefile":    "lower:\n",
		"Makefile":    "upper:\n",
		"mk/a.mk":     "a: ## from a\n",
		"mk/b.mk":     "b:\ninclude mk/a.mk\n", // a cycle is read once
		"mk/c1.mk":    "c1:\n.hidden:\n_private:\n%.o: %.c\n",
	})
	want := []string{"all make make all", "a make make a", "b make make b", "c1 make make c1"}
	if got := listed(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	os.Remove(filepath.Join(dir, "GNUmakefile"))
	if got := listed(t, dir); !reflect.DeepEqual(got, []string{"lower make make lower"}) {
		t.Fatalf("without GNUmakefile: %q", got)
	}
}

func TestPackageManagerFromTheProjectFiles(t *testing.T) {
	for _, c := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{}, "npm"},
		{map[string]string{"package-lock.json": "{}"}, "npm"},
		{map[string]string{"yarn.lock": ""}, "yarn"},
		{map[string]string{"pnpm-lock.yaml": ""}, "pnpm"},
		{map[string]string{"bun.lockb": ""}, "bun"},
		{map[string]string{"bun.lock": "{}"}, "bun"}, // Bun 1.2's text lockfile
		{map[string]string{"yarn.lock": "", "package.json": `{"packageManager":"pnpm@9.1.0+sha512.abc","scripts":{"dev":"vite"}}`}, "pnpm"},
		{map[string]string{"package.json": `{"packageManager":"bun@1.2.0","scripts":{"dev":"vite"}}`}, "bun"},
		// an unknown manager in the field falls back to the lockfile
		{map[string]string{"yarn.lock": "", "package.json": `{"packageManager":"deno@2","scripts":{"dev":"vite"}}`}, "yarn"},
	} {
		t.Run(c.want, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"package.json": `{"scripts":{"dev":"vite"}}`}
			for k, v := range c.files {
				files[k] = v
			}
			writeFiles(t, dir, files)
			want := []string{"dev " + c.want + " " + c.want + " run dev"}
			if got := listed(t, dir); !reflect.DeepEqual(got, want) {
				t.Errorf("%v: got %q, want %q", c.files, got, want)
			}
		})
	}
}

func TestPyprojectRunners(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"pyproject.toml": `
[project.scripts]
app = "app:main"
[tool.poetry.scripts]
app = "app:cli"
[tool.poe.tasks]
app = "echo"
lint = { cmd = "ruff check", help = "Lint the code" }
[tool.pdm.scripts]
_ = { env_file = ".env" }
app = "python -m app"
[tool.hatch.envs.docs.scripts]
build = "mkdocs build"
[tool.hatch.envs.default.scripts]
cov = "pytest --cov"
`})
	want := []string{
		"app-u uv uv run app", "app-p poetry poetry run app", "app-poe poe poe app", "lint poe poe lint",
		"app-pdm pdm pdm run app", "cov hatch hatch run cov", "docs:build hatch hatch run docs:build",
	}
	if got := listed(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestEveryTaskfileName(t *testing.T) {
	for i, name := range taskfileNames {
		dir := t.TempDir()
		files := map[string]string{name: "version: '3'\nincludes:\n  lib: ./lib/" + name + "\ntasks:\n  build: {}\n"}
		files["lib/"+name] = "version: '3'\ntasks:\n  check:\n    desc: from the include\n"
		// a later name in go-task's order is ignored when an earlier one exists
		for _, later := range taskfileNames[i+1:] {
			if !strings.EqualFold(later, name) {
				files[later] = "version: '3'\ntasks:\n  shadowed: {}\n"
				break
			}
		}
		writeFiles(t, dir, files)
		want := []string{"build task task build", "lib:check task task lib:check"}
		if got := listed(t, dir); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
}

func TestBuildWrappers(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"pom.xml": "<project/>", "build.gradle": "task hello {\n}\ntasks.register<Copy>(\"bundle\") {}\n",
	})
	tasks, _, _ := discover(dir, false)
	byName := map[string]Task{}
	for _, task := range tasks {
		byName[task.Name] = task
	}
	if c := byName["compile"].Command; c != "mvn compile" {
		t.Errorf("without the wrapper compile runs %q", c)
	}
	if c := byName["hello"].Command; c != "gradle hello" {
		t.Errorf("without the wrapper hello runs %q", c)
	}
	if c := byName["bundle"].Command; c != "gradle bundle" {
		t.Errorf("tasks.register: %q", c)
	}
	writeFiles(t, dir, map[string]string{"mvnw.x": "#!/bin/sh\n", "gradlew.x": "#!/bin/sh\n"})
	tasks, _, _ = discover(dir, false)
	for _, task := range tasks {
		byName[task.Name] = task
	}
	for name, want := range map[string]string{"compile": "./mvnw compile", "hello": "./gradlew hello", "test-g": "./gradlew test", "test-m": "./mvnw test"} {
		if got := byName[name]; got.Command != want || !got.RunnerAvailable {
			t.Errorf("with the wrapper %s = %q (available %v), want %q", name, got.Command, got.RunnerAvailable, want)
		}
	}
}

// TestNamesIgnoreShellAndPath: dela suffixes a name that is a shell
// builtin or a program on PATH; lm's names come from the files alone.
func TestNamesIgnoreShellAndPath(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Makefile":     "test:\ncd:\nls:\nbuild:\n",
		"package.json": `{"scripts":{"build":"tsc","echo":"x"}}`,
		"deploy.sh":    "#!/bin/sh\n",
	})
	bin := t.TempDir()
	writeFiles(t, bin, map[string]string{"test.x": "#!/bin/sh\n", "deploy.x": "#!/bin/sh\n", "npm.x": "#!/bin/sh\n"})

	t.Setenv("SHELL", "/bin/zsh")
	t.Setenv("PATH", "")
	bare := listed(t, dir)
	t.Setenv("SHELL", "/usr/bin/fish")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+"/usr/bin:/bin")
	shadowed := listed(t, dir)
	want := []string{"test make make test", "cd make make cd", "ls make make ls", "build-m make make build",
		"build-n npm npm run build", "echo npm npm run echo", "deploy sh ./deploy.sh"}
	if !reflect.DeepEqual(bare, want) || !reflect.DeepEqual(shadowed, want) {
		t.Fatalf("names changed with SHELL and PATH:\n%q\n%q\nwant %q", bare, shadowed, want)
	}
}

func TestWorkflowsComposeAndTurbo(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		".git/HEAD":                      "ref: refs/heads/main\n",
		"turbo.json":                     `{"pipeline": {"lint": {}}}`, // turbo 1's key, at the repository root
		"app/.github/workflows/ci.yml":   "name: CI\n",
		"app/workflows/nightly.yaml":     "name: Nightly\n",
		"app/custom/workflows/docs.yml":  "{}",
		"app/.gitlab/workflows/mr.yml":   "name: MR\n",
		"app/.github/workflows/notes.md": "not a workflow",
		"app/docker-compose.dev.yml":     "services:\n  web: {image: x}\n",
		"app/CMakeLists.txt":             "project(x)\nADD_CUSTOM_TARGET(fmt COMMAND clang-format)\n",
		"app/release.sh":                 "#!/bin/sh\n",
	})
	want := []string{
		"lint turbo turbo run lint",
		"ci act act -W .github/workflows/ci.yml", "nightly act act -W workflows/nightly.yaml",
		"docs act act -W custom/workflows/docs.yml", "mr act act -W .gitlab/workflows/mr.yml",
		"up docker compose docker compose -f docker-compose.dev.yml up",
		"down docker compose docker compose -f docker-compose.dev.yml down",
		"web docker compose docker compose -f docker-compose.dev.yml run web",
		"fmt cmake cmake --build build --target fmt",
		"release sh ./release.sh",
	}
	if got := listed(t, filepath.Join(root, "app")); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
