queue "reports" {
  concurrency = 1
}

queue "reports" {
  concurrency = 2
}
