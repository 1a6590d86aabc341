package store

import (
	"sort"

	"lmtool.dev/lm/pkg/table"
)

// Table summarises the store file and lists its buckets: a person's view
// of store info.
func (i Info) Table() table.Table {
	t := table.Table{
		Summary: []table.Field{
			{Name: "path", Value: i.Path},
			{Name: "exists", Value: i.Exists},
			{Name: "size", Value: table.Bytes(i.SizeBytes)},
			{Name: "schema", Value: i.SchemaVersion},
			{Name: "binary schema", Value: i.BinarySchema},
		},
		Columns: []string{"BUCKET", "KEYS"},
		Empty:   "no buckets",
	}
	names := make([]string, 0, len(i.Buckets))
	for name := range i.Buckets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Rows = append(t.Rows, []any{name, i.Buckets[name]})
	}
	return t
}
