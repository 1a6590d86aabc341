package servers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/privatefile"
	"lmtool.dev/lm/pkg/servers/keyring"
)

// SecretsFileName is the secrets file inside LM_HOME: a JSON object of
// names to values, readable by its owner only. A server's env, args or
// headers refer to a secret as ${secret:NAME}; its value is looked up when
// the server starts (see [Secrets]) and appears nowhere lm reports (status,
// the HTTP API, list/show, logs), which show the reference instead.
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
	if secrets == nil { // the file says null
		secrets = map[string]string{}
	}
	return secrets, nil
}

// UpdateSecrets lets change edit home's secrets under an exclusive lock
// and writes them back atomically, readable by the owner only, when they
// changed.
func UpdateSecrets(home string, change func(secrets map[string]string)) error {
	path := SecretsPath(home)
	return privatefile.WithLock(path, func() error {
		secrets, err := LoadSecrets(home)
		if err != nil {
			return err
		}
		before := maps.Clone(secrets)
		change(secrets)
		if maps.Equal(before, secrets) {
			return nil
		}
		data, err := json.MarshalIndent(secrets, "", "  ")
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		return privatefile.Write(path, append(data, '\n'))
	})
}

// Secrets looks up the values of ${secret:NAME} references: in home's
// secrets file first (explicit, and per LM_HOME), then in the OS keyring
// under the service "lm" (shared by all of the user's LM_HOMEs). The file
// is read once; the keyring is asked only for names the file lacks, and not
// again once it has failed to answer. A Secrets is for one goroutine.
type Secrets struct {
	home       string
	file       func() (map[string]string, error)
	keyringErr error // why the keyring could not answer
}

// NewSecrets looks up secrets for home.
func NewSecrets(home string) *Secrets {
	return &Secrets{home: home, file: sync.OnceValues(func() (map[string]string, error) { return LoadSecrets(home) })}
}

// Lookup returns the value of the secret name. A secret found nowhere is a
// [*MissingSecretError]. No error holds a value.
func (s *Secrets) Lookup(ctx context.Context, name string) (string, error) {
	file, err := s.file()
	if err != nil {
		// A broken file is for its owner to fix, not to be worked around.
		return "", err
	}
	if v, ok := file[name]; ok {
		return v, nil
	}
	if s.keyringErr == nil {
		v, err := keyring.Get(ctx, name)
		if err == nil {
			return v, nil
		}
		if errors.Is(err, keyring.ErrNotFound) {
			return "", &MissingSecretError{Name: name, Where: fmt.Sprintf("in neither %s nor the OS keyring (service %q)", SecretsPath(s.home), keyring.Service)}
		}
		s.keyringErr = err
	}
	return "", &MissingSecretError{Name: name, Where: fmt.Sprintf("not in %s, and %v", SecretsPath(s.home), s.keyringErr)}
}

// MissingSecretError is a secret found in no store.
type MissingSecretError struct {
	Name string
	// Where completes "secret NAME is …": the places looked in and, when
	// the keyring could not answer, why.
	Where string
}

func (e *MissingSecretError) Error() string { return "secret " + e.Name + " is " + e.Where }

// Resolver gives references their values: ${env:NAME} from Env,
// ${secret:NAME} from Secret, which is asked once per referenced name.
type Resolver struct {
	Env    func(string) (string, bool)
	Secret func(name string) (string, error)
}

// NewResolver resolves as a server's start does: ${env:NAME} from the
// environment environ ("KEY=value", lm's as its face was started),
// ${secret:NAME} through home's [Secrets].
func NewResolver(ctx context.Context, home string, environ []string) Resolver {
	secrets := NewSecrets(home)
	return Resolver{Env: func(key string) (string, bool) { return op.LookupEnv(environ, key) }, Secret: func(name string) (string, error) { return secrets.Lookup(ctx, name) }}
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
