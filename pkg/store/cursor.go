package store

import bolt "go.etcd.io/bbolt"

// Last is the last key and value of c's bucket, or nils when it has none.
//
// bbolt's Cursor.Last never returns on a bucket whose every leaf page was
// emptied earlier in the same transaction (deleted keys are rebalanced away
// only at commit): it walks back to the first page, which descends to an
// empty leaf again, forever. A transaction that shares its commit with
// others meets that — hundreds of claims empty the pending instructions, then
// an add asks for the last one — so look forward once first: with a key
// left, the walk back ends on it.
func Last(c *bolt.Cursor) (k, v []byte) {
	if k, _ := c.First(); k == nil {
		return nil, nil
	}
	return c.Last()
}
