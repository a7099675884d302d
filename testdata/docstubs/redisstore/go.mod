module example.com/redisstore

go 1.26.0
