module github.com/kplan-dev/kplan/examples

go 1.25.0

replace github.com/kplan-dev/kplan => ../
