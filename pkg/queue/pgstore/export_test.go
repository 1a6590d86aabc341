package pgstore

// MigrateTo brings a database to an older schema version, for testing the
// migrations from it.
var MigrateTo = migrateTo
