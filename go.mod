module github.com/tartanml/tartan

go 1.26.8

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	golang.org/x/sys v0.50.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
