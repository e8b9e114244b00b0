package cl

import "testing"

// TestDispatchSlotsAgreeWithExports checks the slot numbering against a real
// ICD: PoCL exports clGetExtensionFunctionAddress and
// clGetExtensionFunctionAddressForPlatform by name, and the entries of its
// dispatch table at slots 65 and 107 must be those same functions.
func TestDispatchSlotsAgreeWithExports(t *testing.T) {
	lib := vendorTestLibrary(t)
	ps, err := lib.Platforms()
	if err != nil || len(ps) == 0 {
		t.Fatalf("Platforms: %v, %v", ps, err)
	}
	p := ps[0]
	if p.Mode() != ModeDispatch {
		t.Skipf("PoCL uses %s here; slots are not read", p.Mode())
	}
	for _, id := range []fnID{fnGetExtensionFunctionAddress, fnGetExtensionFunctionAddressForPlatform} {
		exported := sym(lib.handle, fnSpecs[id].name)
		if exported == 0 {
			t.Logf("%s is not exported; not checked", fnSpecs[id].name)
			continue
		}
		if p.t.ptr[id] != exported {
			t.Errorf("slot %d holds %#x, but %s is exported at %#x", fnSpecs[id].slot, p.t.ptr[id], fnSpecs[id].name, exported)
		}
	}
	// Every entry point used for an OpenCL 1.2+ platform must be filled.
	for id := range numFns {
		if p.t.ptr[id] == 0 {
			t.Errorf("%s missing from PoCL's dispatch table", fnSpecs[id].name)
		}
	}
}

func TestSlotsAreDistinctAndOrdered(t *testing.T) {
	seen := map[int]string{}
	for id := range numFns {
		s := fnSpecs[id]
		if s.name == "" {
			t.Fatalf("fnID %d has no spec", id)
		}
		if other, dup := seen[s.slot]; dup {
			t.Errorf("%s and %s share slot %d", s.name, other, s.slot)
		}
		seen[s.slot] = s.name
		// OpenCL 1.0 entries live in the first 75 slots; 1.2 from slot 93.
		if (s.since == 10) != (s.slot < 75) {
			t.Errorf("%s: slot %d does not match version %d", s.name, s.slot, s.since)
		}
	}
}
