package semver

import "strings"

// Compare returns -1 when a has lower precedence than b, +1 when it has higher
// precedence and 0 when both have the same precedence. Build metadata is
// ignored.
func Compare(a, b Version) int {
	if c := compareUint(a.Major, b.Major); c != 0 {
		return c
	}
	if c := compareUint(a.Minor, b.Minor); c != 0 {
		return c
	}
	if c := compareUint(a.Patch, b.Patch); c != 0 {
		return c
	}
	return comparePre(a.Pre, b.Pre)
}

// Less reports whether v has lower precedence than w.
func (v Version) Less(w Version) bool { return Compare(v, w) < 0 }

// Equal reports whether v and w have the same precedence (build metadata is
// ignored).
func (v Version) Equal(w Version) bool { return Compare(v, w) == 0 }

// IsPrerelease reports whether v has pre-release identifiers.
func (v Version) IsPrerelease() bool { return len(v.Pre) > 0 }

// comparePre compares pre-release identifier lists (section 11.3 and 11.4 of
// the specification). A release (no identifiers) has higher precedence than
// any pre-release of the same version; otherwise identifiers compare pairwise
// and, when all of them are equal, the longer list wins.
func comparePre(a, b []string) int {
	switch {
	case len(a) == 0 && len(b) == 0:
		return 0
	case len(a) == 0:
		return 1
	case len(b) == 0:
		return -1
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareIdentifier(a[i], b[i]); c != 0 {
			return c
		}
	}
	return compareInt(len(a), len(b))
}

// compareIdentifier orders numeric identifiers numerically and below
// alphanumeric ones, which compare in ASCII order.
func compareIdentifier(a, b string) int {
	an, bn := isNumeric(a), isNumeric(b)
	switch {
	case an && bn:
		// Parse rejects leading zeros, so a longer number is a larger one even
		// past the range of uint64.
		if c := compareInt(len(a), len(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
