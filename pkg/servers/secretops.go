package servers

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers/keyring"
)

// The stores a secret can be in, in lookup order.
const (
	inFile    = "file"
	inKeyring = "keyring"
)

// SecretSetInput is servers_secret_set's input.
type SecretSetInput struct {
	Name    string `json:"name" jsonschema:"the secret's name, as in ${secret:NAME}"`
	Value   string `json:"value,omitempty" jsonschema:"the secret's value, read from stdin"`
	File    bool   `json:"file,omitempty" jsonschema:"store it in $LM_HOME/secrets.json instead of the OS keyring"`
	Keyring bool   `json:"keyring,omitempty" jsonschema:"store it in the OS keyring, as without --file"`
}

// RefineSchema keeps the value off the command line.
func (SecretSetInput) RefineSchema(s *jsonschema.Schema) { s.Properties["value"].WriteOnly = true }

// Validate checks what the schema cannot.
func (in SecretSetInput) Validate() error {
	if err := validSecretName(in.Name); err != nil {
		return err
	}
	if in.File && in.Keyring {
		return op.Errorf(op.KindInvalid, "choose one store: --file or --keyring")
	}
	if in.Value == "" {
		return op.Errorf(op.KindInvalid, "no value on stdin").
			WithHint("lm servers secret set %s < FILE, or printf %%s \"$VALUE\" | lm servers secret set %s", in.Name, in.Name)
	}
	return nil
}

// SecretRmInput is servers_secret_rm's input.
type SecretRmInput struct {
	Name    string `json:"name" jsonschema:"the secret's name"`
	File    bool   `json:"file,omitempty" jsonschema:"remove it from $LM_HOME/secrets.json only"`
	Keyring bool   `json:"keyring,omitempty" jsonschema:"remove it from the OS keyring only"`
}

// Validate checks what the schema cannot.
func (in SecretRmInput) Validate() error {
	if err := validSecretName(in.Name); err != nil {
		return err
	}
	if in.File && in.Keyring {
		return op.Errorf(op.KindInvalid, "choose one store, or neither for both: --file or --keyring")
	}
	return nil
}

func validSecretName(name string) error {
	if !referenceName.MatchString(name) {
		return op.Errorf(op.KindInvalid, "%q is not a secret name", name).WithHint("letters, digits, _ . and -")
	}
	return nil
}

// SecretChanged is what servers_secret_set or servers_secret_rm did.
type SecretChanged struct {
	Name string   `json:"name"`
	Done string   `json:"done" jsonschema:"stored or removed"`
	In   []string `json:"in" jsonschema:"the stores changed: file, keyring"`
	Note string   `json:"note,omitempty" jsonschema:"what else the user should know, such as a value that another store shadows"`
}

// SetSecret is servers_secret_set.
func SetSecret(ctx context.Context, env *op.Env, in SecretSetInput) (SecretChanged, error) {
	out := SecretChanged{Name: in.Name, Done: "stored"}
	if in.File {
		if err := UpdateSecrets(env.Home, func(s map[string]string) { s[in.Name] = in.Value }); err != nil {
			return SecretChanged{}, err
		}
		out.In = []string{inFile}
		return out, nil
	}
	// The file is looked up first: a value there would hide this one.
	file, err := LoadSecrets(env.Home)
	if err != nil {
		return SecretChanged{}, err
	}
	if err := keyring.Set(ctx, in.Name, in.Value); err != nil {
		var unavailable *keyring.UnavailableError
		if !errors.As(err, &unavailable) {
			return SecretChanged{}, op.Errorf(op.KindInvalid, "store %s: %w", in.Name, err)
		}
		return SecretChanged{}, op.Errorf(op.KindUnavailable, "store %s: %w", in.Name, err).
			WithHint("keep it in %s instead: add --file", SecretsPath(env.Home))
	}
	out.In = []string{inKeyring}
	if _, ok := file[in.Name]; ok {
		out.Note = SecretsPath(env.Home) + " also holds " + in.Name + " and is looked up first, so servers get that value: lm servers secret rm " + in.Name + " --file"
	}
	return out, nil
}

// RemoveSecret is servers_secret_rm: from both stores unless one is named.
func RemoveSecret(ctx context.Context, env *op.Env, in SecretRmInput) (SecretChanged, error) {
	out := SecretChanged{Name: in.Name, Done: "removed", In: []string{}}
	if !in.Keyring {
		found := false
		err := UpdateSecrets(env.Home, func(s map[string]string) {
			_, found = s[in.Name]
			delete(s, in.Name)
		})
		if err != nil {
			return SecretChanged{}, err
		}
		if found {
			out.In = append(out.In, inFile)
		}
	}
	if !in.File {
		err := keyring.Delete(ctx, in.Name)
		switch {
		case err == nil:
			out.In = append(out.In, inKeyring)
		case errors.Is(err, keyring.ErrNotFound): // nothing to remove there
		case !in.Keyring && len(out.In) > 0:
			out.Note = err.Error() + "; it may still hold " + in.Name
		default:
			return SecretChanged{}, op.Errorf(op.KindUnavailable, "remove %s: %w", in.Name, err)
		}
	}
	if len(out.In) == 0 {
		return SecretChanged{}, op.Errorf(op.KindNotFound, "secret %s is not in %s", in.Name, searched(env.Home, in.File, in.Keyring)).
			WithHint("see 'lm servers secret list'")
	}
	return out, nil
}

// searched names the stores an operation looked in.
func searched(home string, fileOnly, keyringOnly bool) string {
	kr := "the OS keyring (service " + keyring.Service + ")"
	switch {
	case fileOnly:
		return SecretsPath(home)
	case keyringOnly:
		return kr
	}
	return SecretsPath(home) + " or " + kr
}

// SecretListInput takes nothing.
type SecretListInput struct{}

// SecretListOutput lists secrets by name; values are never read out.
type SecretListOutput struct {
	Secrets            []SecretEntry `json:"secrets"`
	File               string        `json:"file" jsonschema:"the secrets file"`
	KeyringService     string        `json:"keyring_service" jsonschema:"the OS keyring's service that holds lm's secrets"`
	KeyringUnavailable string        `json:"keyring_unavailable,omitempty" jsonschema:"why the OS keyring could not be asked; in then leaves it out"`
}

// SecretEntry is one secret.
type SecretEntry struct {
	Name   string   `json:"name"`
	In     []string `json:"in" jsonschema:"where it is stored, in lookup order (a start uses the first): file, keyring; empty when nowhere"`
	UsedBy []string `json:"used_by" jsonschema:"the servers that reference it"`
}

// ListSecrets is servers_secret_list: the secrets the servers reference
// and those in the file (a keyring cannot be listed on every platform).
func ListSecrets(ctx context.Context, env *op.Env, _ SecretListInput) (SecretListOutput, error) {
	cfg, err := loadOp(env.Home)
	if err != nil {
		return SecretListOutput{}, err
	}
	file, err := LoadSecrets(env.Home)
	if err != nil {
		return SecretListOutput{}, err
	}
	usedBy := map[string][]string{}
	for _, server := range cfg.Names() {
		for _, name := range cfg.Servers[server].secretNames() {
			usedBy[name] = append(usedBy[name], server)
		}
	}
	out := SecretListOutput{Secrets: []SecretEntry{}, File: SecretsPath(env.Home), KeyringService: keyring.Service}
	names := map[string]bool{}
	for name := range file {
		names[name] = true
	}
	for name := range usedBy {
		names[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		e := SecretEntry{Name: name, In: []string{}, UsedBy: usedBy[name]}
		if e.UsedBy == nil {
			e.UsedBy = []string{}
		}
		if _, ok := file[name]; ok {
			e.In = append(e.In, inFile)
		}
		// Once the keyring has failed to answer, it is not asked again.
		if out.KeyringUnavailable == "" {
			_, err := keyring.Get(ctx, name)
			switch {
			case err == nil:
				e.In = append(e.In, inKeyring)
			case !errors.Is(err, keyring.ErrNotFound):
				out.KeyringUnavailable = err.Error()
			}
		}
		out.Secrets = append(out.Secrets, e)
	}
	return out, nil
}
