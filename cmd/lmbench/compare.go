package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// A figure is one number a benchmark section records (recordFigure) for
// the regression check: larger is worse, and noise is how much larger it
// may get on the same machine with nothing changed.
type figure struct {
	name         string
	value, noise float64
}

// compareFigures prints the regression check: each figure of this run
// (newPath) beside the one in the committed baseline (basePath, the
// figures of the run BENCHMARKS.md was written from), and says which got
// worse by more than noise. scripts/bench.sh then makes this run's figures
// the baseline, committed with BENCHMARKS.md.
func compareFigures(basePath, newPath string, out, warn io.Writer) error {
	now, err := readFigures(newPath)
	if err != nil {
		return err
	}
	base, err := readFigures(basePath)
	if errors.Is(err, fs.ErrNotExist) {
		base, err = nil, nil
	}
	if err != nil {
		return err
	}
	committed := map[string]figure{}
	for _, f := range base {
		committed[f.name] = f
	}
	fmt.Fprintln(out, "## Regression checks")
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Each figure beside the committed one (%s, written with BENCHMARKS.md); larger is worse, and a figure is worse when it exceeds the committed one by more than its noise.\n\n", basePath)
	fmt.Fprintln(out, "| figure | committed | now | noise | verdict |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	for _, f := range now {
		old, ok := committed[f.name]
		verdict := "no committed figure"
		switch {
		case !ok:
		case f.value > old.value+f.noise:
			verdict = "**worse**"
			fmt.Fprintf(warn, "lmbench: WORSE than committed: %s: %g, committed %g (noise %g)\n", f.name, f.value, old.value, f.noise)
		default:
			verdict = "ok"
		}
		committedText := "–"
		if ok {
			committedText = strconv.FormatFloat(old.value, 'g', 4, 64)
		}
		fmt.Fprintf(out, "| %s | %s | %s | %g | %s |\n", f.name, committedText, strconv.FormatFloat(f.value, 'g', 4, 64), f.noise, verdict)
	}
	fmt.Fprintln(out)
	return nil
}

// readFigures reads a file recordFigure wrote: name, value and noise,
// tab-separated, one a line.
func readFigures(path string) ([]figure, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []figure
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: want name, value and noise separated by tabs, got %q", path, n, sc.Text())
		}
		value, err1 := strconv.ParseFloat(fields[1], 64)
		noise, err2 := strconv.ParseFloat(fields[2], 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, figure{fields[0], value, noise})
	}
	return out, sc.Err()
}
