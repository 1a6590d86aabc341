package mcpx

// peek reads a JSON-RPC message's top-level "id" and "method" and whether it
// carries a "result" or "error", without decoding the rest: the stdio
// tracker looks at every message, and full decoding of large tool results
// would cost more than the tools themselves. It stops as soon as the answer
// is known and reports ok=false for anything that is not a JSON object.
func peek(msg []byte) (id []byte, method string, response bool, ok bool) {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return nil, "", false, false
	}
	i++
	for {
		i = skipSpace(msg, i)
		if i >= len(msg) || msg[i] != '"' {
			return id, method, response, i < len(msg) && msg[i] == '}'
		}
		keyEnd := skipString(msg, i)
		if keyEnd < 0 {
			return nil, "", false, false
		}
		key := string(msg[i+1 : keyEnd-1])
		i = skipSpace(msg, keyEnd)
		if i >= len(msg) || msg[i] != ':' {
			return nil, "", false, false
		}
		i = skipSpace(msg, i+1)
		end := skipValue(msg, i)
		if end < 0 {
			return nil, "", false, false
		}
		switch key {
		case "id":
			id = msg[i:end]
		case "method":
			if msg[i] == '"' {
				method = string(msg[i+1 : end-1])
			}
		case "result", "error":
			response = true
		}
		if id != nil && (method != "" || response) {
			return id, method, response, true
		}
		i = skipSpace(msg, end)
		if i < len(msg) && msg[i] == ',' {
			i++
		}
	}
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
