queue "default" {
  concurrency = 2
}

jobs "backup" {
  schedule = "@daily"
}
