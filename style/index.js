import './base.css';
import './mlflow.css';
