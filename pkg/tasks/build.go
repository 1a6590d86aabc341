package tasks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// findTurbo reads turbo.json here, else at the git repository's root.
func findTurbo(f files) ([]Task, error) {
	dir := f.dir
	path := f.firstExisting(dir, "turbo.json")
	if path == "" {
		if root := gitRoot(dir); root != "" && root != dir {
			path = f.firstExisting(root, "turbo.json")
		}
	}
	if path == "" {
		return nil, nil
	}
	data, err := f.readFile(path)
	if err != nil {
		return nil, parseErr(path, err)
	}
	var doc struct {
		Tasks    json.RawMessage `json:"tasks"`
		Pipeline json.RawMessage `json:"pipeline"`
	}
	if err := json.Unmarshal(stripJSONC(data), &doc); err != nil {
		return nil, parseErr(path, err)
	}
	defs := doc.Tasks
	if len(defs) == 0 {
		defs = doc.Pipeline
	}
	var tasks []Task
	err = eachKey(defs, func(name string, raw json.RawMessage) error {
		tasks = append(tasks, newTask("turbo", name, path, "", "turbo", "run", name))
		return nil
	})
	if err != nil {
		return nil, parseErr(path, err)
	}
	return tasks, nil
}

func gitRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

var mavenPhases = []string{"clean", "validate", "compile", "test", "package", "verify", "install", "deploy", "site"}

// findMaven lists Maven's lifecycle phases, run with ./mvnw when the
// project has the wrapper.
func findMaven(f files) ([]Task, error) {
	dir := f.dir
	path := f.firstExisting(dir, "pom.xml")
	if path == "" {
		return nil, nil
	}
	mvn := "mvn"
	if f.firstExisting(dir, "mvnw") != "" {
		mvn = "./mvnw"
	}
	var tasks []Task
	for _, p := range mavenPhases {
		tasks = append(tasks, newTask("mvn", p, path, "Maven lifecycle phase", mvn, p))
	}
	return tasks, nil
}

var (
	gradleCommon   = []string{"build", "clean", "test", "assemble", "check"}
	gradleTaskDecl = regexp.MustCompile(`(?m)(?:^\s*task\s+([A-Za-z_][\w-]*)|tasks\.register(?:<[^>]*>)?\(\s*"([\w-]+)")`)
)

// findGradle lists Gradle's common tasks and those the build file
// declares, run with ./gradlew when the project has the wrapper.
func findGradle(f files) ([]Task, error) {
	dir := f.dir
	path := f.firstExisting(dir, "build.gradle", "build.gradle.kts")
	if path == "" {
		return nil, nil
	}
	data, err := f.readFile(path)
	if err != nil {
		return nil, parseErr(path, err)
	}
	gradle := "gradle"
	if f.firstExisting(dir, "gradlew") != "" {
		gradle = "./gradlew"
	}
	names := append([]string(nil), gradleCommon...)
	for _, m := range gradleTaskDecl.FindAllStringSubmatch(string(data), -1) {
		names = append(names, m[1]+m[2])
	}
	var tasks []Task
	seen := map[string]bool{}
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			tasks = append(tasks, newTask("gradle", n, path, "", gradle, n))
		}
	}
	return tasks, nil
}

var cmakeTarget = regexp.MustCompile(`(?mi)^\s*add_custom_target\s*\(\s*([A-Za-z0-9_.+-]+)`)

// findCMake lists add_custom_target targets, built in ./build.
func findCMake(f files) ([]Task, error) {
	dir := f.dir
	path := f.firstExisting(dir, "CMakeLists.txt")
	if path == "" {
		return nil, nil
	}
	data, err := f.readFile(path)
	if err != nil {
		return nil, parseErr(path, err)
	}
	var tasks []Task
	for _, m := range cmakeTarget.FindAllStringSubmatch(string(data), -1) {
		tasks = append(tasks, newTask("cmake", m[1], path, "CMake custom target (configure ./build first)",
			"cmake", "--build", "build", "--target", m[1]))
	}
	return tasks, nil
}

// findScripts lists the directory's *.sh scripts.
func findScripts(f files) ([]Task, error) {
	dir := f.dir
	entries, err := f.readDir(dir)
	if err != nil {
		return nil, err
	}
	var tasks []Task
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".sh") {
			continue
		}
		tasks = append(tasks, newTask("sh", strings.TrimSuffix(e.Name(), ".sh"), filepath.Join(dir, e.Name()), "", "./"+e.Name()))
	}
	return tasks, nil
}

// stripJSONC removes // and /* */ comments and trailing commas outside
// strings, turning JSONC (deno.jsonc, turbo.json) into JSON.
func stripJSONC(data []byte) []byte {
	out := make([]byte, 0, len(data))
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out = append(out, c)
			if c == '\\' && i+1 < len(data) {
				i++
				out = append(out, data[i])
			} else if c == '"' {
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i--
			continue
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := strings.Index(string(data[i+2:]), "*/")
			if end < 0 {
				return out
			}
			i += end + 3
			continue
		case c == '}' || c == ']':
			// drop a trailing comma before the closing bracket
			j := len(out) - 1
			for j >= 0 && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j--
			}
			if j >= 0 && out[j] == ',' {
				out = append(out[:j], out[j+1:]...)
			}
		}
		out = append(out, c)
	}
	return out
}
