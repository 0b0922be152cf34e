//! TODO schema
