//go:build !amd64 || purego

package cpu

func simdDotAcc([]float64, []float32, []float32, []int, []int) int { return 0 }

func simdSumAcc([]float64, []float32, []int) int { return 0 }

func simdAxpy([]float32, float32, []float32, int, int) int { return 0 }

var useAVX512 = false

func simdGather2([]float32, []float32, int) bool { return false }
