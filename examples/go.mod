module github.com/kplan-dev/kplan/examples

go 1.26.0

replace github.com/kplan-dev/kplan => ../
