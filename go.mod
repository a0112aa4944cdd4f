module dprl

go 1.26

require (
	github.com/mattn/go-isatty v0.0.24
	github.com/rs/zerolog v1.35.1
	github.com/spf13/cobra v1.10.2
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/sys v0.29.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
