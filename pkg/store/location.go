package store

import (
	"errors"
	"path/filepath"
)

// Home is the directory for lm's files: $LM_HOME, else $XDG_DATA_HOME/lm,
// else ~/.local/share/lm, in the environment getenv reads (the face's). It
// needs nothing but HOME, which every MCP client passes to the servers it
// spawns.
func Home(getenv func(string) string) (string, error) {
	if h := getenv("LM_HOME"); h != "" {
		return filepath.Abs(h)
	}
	if x := getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "lm"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("cannot locate lm's home: set LM_HOME, XDG_DATA_HOME or HOME, or pass --store")
	}
	return filepath.Join(home, ".local", "share", "lm"), nil
}

// Locate resolves the store file: the explicit path (--store), else
// $LM_STORE, else lm.db in [Home].
func Locate(explicit string, getenv func(string) string) (string, error) {
	if explicit == "" {
		explicit = getenv("LM_STORE")
	}
	if explicit != "" {
		return filepath.Abs(explicit)
	}
	home, err := Home(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "lm.db"), nil
}
