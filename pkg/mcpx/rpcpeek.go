package mcpx

// peek reads a JSON-RPC message's top-level "id" and "method" and whether it
// carries a "result" or "error", without decoding the rest: the stdio
// tracker looks at every message, and full decoding of large tool results
// would cost more than the tools themselves. It stops as soon as the answer
// is known and reports ok=false for anything that is not a JSON object.
func peek(msg []byte) (id []byte, method string, response bool, ok bool) {
	ok = Members(msg, func(key, value []byte) bool {
		switch string(key) {
		case "id":
			id = value
		case "method":
			method = stringValue(value)
		case "result", "error":
			response = true
		}
		return id == nil || (method == "" && !response)
	})
	if !ok {
		return nil, "", false, false
	}
	return id, method, response, true
}

// Frame is a JSON-RPC message's top-level members as spans of the message:
// what routing a message needs, without decoding the rest.
type Frame struct {
	JSONRPC string
	ID      []byte // as written; nil when absent
	Method  string
	Params  []byte
	Result  []byte
	Error   []byte
}

// ReadFrame reads every top-level member of msg, which must be one JSON
// object (ok is false otherwise). It checks the object's shape only: a
// caller that passes a value on validates msg first.
func ReadFrame(msg []byte) (f Frame, ok bool) {
	ok = Members(msg, func(key, value []byte) bool {
		switch string(key) {
		case "jsonrpc":
			f.JSONRPC = stringValue(value)
		case "id":
			f.ID = value
		case "method":
			f.Method = stringValue(value)
		case "params":
			f.Params = value
		case "result":
			f.Result = value
		case "error":
			f.Error = value
		}
		return true
	})
	if !ok {
		return Frame{}, false
	}
	return f, true
}

// Members calls fn with each member of the JSON object msg (its key as
// written, between the quotes, and its value's span), in order, until fn
// returns false. It reports whether msg is an object as far as it read:
// false when it is not, or when it ends before its closing brace. It does
// not validate what it skips: a caller that passes a value on checks msg
// with json.Valid first.
func Members(msg []byte, fn func(key, value []byte) bool) bool {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(msg, i)
		if i >= len(msg) || msg[i] != '"' {
			return i < len(msg) && msg[i] == '}'
		}
		keyEnd := skipString(msg, i)
		if keyEnd < 0 {
			return false
		}
		key := msg[i+1 : keyEnd-1]
		i = skipSpace(msg, keyEnd)
		if i >= len(msg) || msg[i] != ':' {
			return false
		}
		i = skipSpace(msg, i+1)
		end := skipValue(msg, i)
		if end < 0 {
			return false
		}
		if !fn(key, msg[i:end]) {
			return true
		}
		i = skipSpace(msg, end)
		if i < len(msg) && msg[i] == ',' {
			i++
		}
	}
}

// stringValue is a JSON string's text, without unescaping (method names
// need none); "" for any other value.
func stringValue(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	return string(v[1 : len(v)-1])
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i].
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index just past the JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
				if j < 0 {
					return -1
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}
