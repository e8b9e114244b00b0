package spirv

// For the device tests of package spirv_test.
var (
	CornerProgram  = cornerProgram
	ScatterProgram = scatterProgram
	CloseTo        = closeTo
)
