package op

// Catalog is everything a program offers, as its faces need it: the
// operations and resources, and how the command line groups them.
// pkg/registry assembles lm's; a program's main hands it to the faces (the
// CLI, which passes it on to lm mcp and the gateway), so no face imports
// the registry and a test can serve any catalog it builds.
type Catalog struct {
	Ops       []Operation
	Resources []Resource
	// Groups are the top-level command groups in the order help shows
	// them; Subgroups summarise the commands that only hold others, by
	// CLI path ("servers fav").
	Groups    []Group
	Subgroups map[string]string
}

// Group describes a top-level command group.
type Group struct {
	Name    string
	Summary string
}
