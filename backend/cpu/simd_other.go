//go:build !amd64 || purego

package cpu

import "github.com/tartanml/tartan/tile"

// Without AVX2 assembly every loop runs in Go.

func simdBinaryF(tile.Fn, []float32, []float32, []float32) int { return 0 }

func simdSelectF([]float32, []float32, []float32, []float32) int { return 0 }

func simdUnaryF(tile.Fn, []float32, []float32) int { return 0 }

func simdAggregateF(tile.Agg, []float64, []float32) int { return 0 }

func simdPhilox([]float32, uint64, uint64, uint64) int { return 0 }

func simdAggregateF32(tile.Agg, []float32, []float32) int { return 0 }

func simdMaskAggregateF32(tile.Agg, []float32, []float32, []bool) int { return 0 }

func simdMaskZeroF32([]bool, []float32) int { return 0 }

func simdRelu([]float32, []float32) int { return 0 }

func simdReluAgg(tile.Agg, []float32, []float32) int { return 0 }

func simdFirst([]float32, []float32, []float32, float32, bool) int { return 0 }

func simdInfToZero([]float32) int { return 0 }

func simdRoute([]float32, []float32, []float32, []float32, float32) int { return 0 }

func simdBoolsToF32([]float32, []bool) int { return 0 }

func simdF32ToBools([]bool, []float32) int { return 0 }

func simdTranscendF(tile.Fn, []float32, []float32) bool { return false }

func simdToF32([]float32, []float64) int { return 0 }
