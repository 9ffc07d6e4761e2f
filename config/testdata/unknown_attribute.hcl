queue "reports" {
  concurency = 2
}
