job "backup" {
  schedule = "@daily"
  command  = "backup.sh"
  catch_up = "first"
}
