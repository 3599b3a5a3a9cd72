#include <cpprest/http_client.h>
