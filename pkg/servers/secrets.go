package servers

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SecretsFileName is the secrets file inside LM_HOME: a JSON object of
// names to values, readable by its owner only. A server's env, args or
// headers refer to an entry as ${secret:NAME}; the value is read when the
// server starts and appears nowhere lm reports (status, the HTTP API,
// list/show, logs), which show the reference instead.
const SecretsFileName = "secrets.json"

// SecretsPath is the secrets file in home.
func SecretsPath(home string) string { return filepath.Join(home, SecretsFileName) }

// LoadSecrets reads home's secrets file. A missing file holds no secrets;
// a file others can read is refused, as ssh refuses such a key, because
// it has already leaked to them.
func LoadSecrets(home string) (map[string]string, error) {
	path := SecretsPath(home)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the secrets file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read the secrets file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %04o): run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	var secrets map[string]string
	if err := json.NewDecoder(f).Decode(&secrets); err != nil {
		// The decoder's message never quotes the file's content.
		return nil, fmt.Errorf("%s is not a JSON object of names to strings: %w", path, err)
	}
	return secrets, nil
}

// Resolver gives references their values: ${env:NAME} from Env,
// ${secret:NAME} from Secrets, which is called at most once and only when
// a secret is referenced.
type Resolver struct {
	Env     func(string) (string, bool)
	Secrets func() (map[string]string, error)
}

// Scrubber hides secret values in text lm reports: each becomes its
// reference, ${secret:NAME}.
type Scrubber struct{ replacer *strings.Replacer }

// NewScrubber hides the given secrets (name → value).
func NewScrubber(secrets map[string]string) *Scrubber {
	var pairs []string
	for name, v := range secrets {
		if v != "" {
			pairs = append(pairs, v, "${secret:"+name+"}")
		}
	}
	return &Scrubber{replacer: strings.NewReplacer(pairs...)}
}

// Scrub returns s with every secret value replaced by its reference.
func (s *Scrubber) Scrub(text string) string {
	if s == nil {
		return text
	}
	return s.replacer.Replace(text)
}
