job "backup" {
  schedule = "@daily"
  command  = file("backup.sh")
}
