// Package deps pins the project's third-party modules while the packages that use
// them are being written; it is removed once every module has a real importer.
package deps

import (
	_ "github.com/a-h/templ"
	_ "github.com/anthropics/anthropic-sdk-go"
	_ "github.com/chromedp/chromedp"
	_ "github.com/glebarez/sqlite"
	_ "github.com/google/uuid"
	_ "github.com/gorilla/websocket"
	_ "github.com/hiero-ledger/hiero-sdk-go/v2/proto/services"
	_ "github.com/hiero-ledger/hiero-sdk-go/v2/sdk"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/labstack/echo/v4"
	_ "github.com/labstack/echo/v4/middleware"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "golang.org/x/crypto/bcrypt"
	_ "google.golang.org/grpc"
	_ "gopkg.in/yaml.v3"
	_ "gorm.io/driver/postgres"
	_ "gorm.io/gorm"
)
