package wire

// ValidTraceparent reports whether tp is a W3C Trace Context traceparent
// the executor carries: version 00's form, "00-" 32 hex "-" 16 hex "-" 2
// hex, lower case, with neither id all zeros (a later version's longer
// form exceeds MaxTraceparentBytes). A producer that relays a caller's
// header (the gateway) drops one that is not valid instead of sending an
// intent the executor would reject or carry as garbage.
func ValidTraceparent(tp string) bool {
	if len(tp) != MaxTraceparentBytes || tp[:3] != "00-" || tp[35] != '-' || tp[52] != '-' {
		return false
	}
	trace, parent, flags := tp[3:35], tp[36:52], tp[53:]
	return lowerHex(trace) && lowerHex(parent) && lowerHex(flags) && !allZero(trace) && !allZero(parent)
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
